-- fabriciq schema, version 16: the route of each probe flow of a path
-- (issue 19: the localisation's remaining accuracy gap).
--
-- An agent probes each NIC pair over several flows (agent.probe_flows:
-- UDP ports 7101+k at both ends), so ECMP sends each over its own route,
-- and traces each flow apart (proto PathTrace.flow). A route row is now
-- one route of one flow of a path; flow 0 is the one agents before flows
-- traced. path_routes_current and route_changes keep their meaning (each
-- path's flow 0: a NIC pair's route, one row a path); the routes of every
-- flow now are path_flow_routes_current.
alter table fabriciq.path_routes add column flow integer not null default 0 check (flow >= 0 and flow < 64);
drop index fabriciq.path_routes_path;
create index path_routes_path on fabriciq.path_routes (node, nic, remote_node, remote_nic, flow, first_seen desc);
comment on column fabriciq.path_routes.flow is
	'The probe flow traced: its UDP ports are the probe port + flow at both ends (0: the path''s first, as agents before flows).';

create or replace view fabriciq.path_routes_current as
	select distinct on (node, nic, remote_node, remote_nic)
		node, nic, remote_node, remote_nic, hops, reached, first_seen, last_seen
	from fabriciq.path_routes
	where flow = 0
	order by node, nic, remote_node, remote_nic, first_seen desc, id desc;

create or replace view fabriciq.route_changes as
	select * from (
		select node, nic, remote_node, remote_nic, first_seen as time,
			lag(hops) over w as hops_before, hops as hops_after,
			lag(reached) over w as reached_before, reached as reached_after
		from fabriciq.path_routes
		where flow = 0
		window w as (partition by node, nic, remote_node, remote_nic order by first_seen, id)
	) c
	where hops_before is not null;

-- The route of every flow of every path now.
create view fabriciq.path_flow_routes_current as
	select distinct on (node, nic, remote_node, remote_nic, flow)
		node, nic, remote_node, remote_nic, flow, hops, reached, first_seen, last_seen
	from fabriciq.path_routes
	order by node, nic, remote_node, remote_nic, flow, first_seen desc, id desc;
