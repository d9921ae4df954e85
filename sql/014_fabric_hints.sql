-- fabriciq schema, version 14: fabric hints.
--
-- A fault blamed on the fabric (a fabric_delay or fabric_loss incident on
-- a switch or a switch-to-switch link) is no node's: draining the nodes
-- whose paths cross it would take healthy hosts away and leave the fault
-- where it is. Its hint is a 'check': no node, the component blamed (a
-- switch "spine3", a cable "leaf1~spine3", one direction of a link
-- "leaf1>spine3") and, in reason, what to check there (a cable's optics
-- and error counters, a switch's buffers, pause counters and ECMP share).
-- One per incident (anomaly_id: the incident), made when it opens. Nothing
-- runs it: `fabriciq hints --apply` prints it and records it as handed
-- over (applied_at), and never reads it as a drained node.
alter table fabriciq.drain_hints alter column node drop not null;
alter table fabriciq.drain_hints add column component text;
alter table fabriciq.drain_hints drop constraint drain_hints_action_check;
alter table fabriciq.drain_hints add constraint drain_hints_action_check
	check (action in ('drain', 'resume', 'check'));
-- A node's hint names its node, a fabric hint its component, never both.
alter table fabriciq.drain_hints add constraint drain_hints_place_check
	check (case when action = 'check' then node is null and nic is null and component is not null
	            else node is not null and component is null end);
comment on column fabriciq.drain_hints.component is
	'A fabric hint (action ''check''): the component to check ("spine3", "leaf1~spine3"); null for a node''s drain or resume.';
comment on column fabriciq.drain_hints.reason is
	'drain, resume: the Slurm reason; check: what to check on the component.';
