-- fabriciq schema, version 4: the controller's own state.
--
-- agent_seq: per node, the highest agent frame sequence number stored
-- (proto Envelope.seq). The controller drops a frame at or below it as a
-- replay of one already stored, so an agent's at-least-once spool replay
-- is stored exactly once, across controller restarts too.
create table fabriciq.agent_seq (
	node       text primary key,
	last_seq   int8 not null check (last_seq >= 0),
	updated_at timestamptz not null default now()
);
