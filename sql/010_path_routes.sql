-- fabriciq schema, version 10: the route each probed path takes, with its
-- history (issue: topology from the probe mesh).
--
-- Each agent traces every path it probes hop by hop with the probes' own
-- 5-tuple (so each ECMP hash's route), and sends the route when it is first
-- known, when it changes and once an hour (proto PathTrace). A row is one
-- route of one path for as long as it held: a new row when the route
-- differs from the path's latest, else that row's last_seen moves on. So
-- the latest row per path is the fabric as it is now, and a path with more
-- than one row changed route (a cable moved, a link down and re-routed).
create table fabriciq.path_routes (
	id bigserial primary key,
	node text not null,
	nic text not null,
	remote_node text not null,
	remote_nic text not null,
	hops inet[] not null,
	reached boolean not null,
	first_seen timestamptz not null,
	last_seen timestamptz not null,
	check (cardinality(hops) <= 32)
);
create index path_routes_path on fabriciq.path_routes (node, nic, remote_node, remote_nic, first_seen desc);

comment on table fabriciq.path_routes is
	'Each probed path''s route through the fabric, one row per route for as long as it held.';
comment on column fabriciq.path_routes.hops is
	'The routers at TTL 1, 2, ..., each by the address it answered from (the interface the probe came in on, on switches that answer so); NULL where none answered.';
comment on column fabriciq.path_routes.reached is
	'The far agent echoed the probe one hop past the last router: the route is whole to the destination NIC.';

-- The route of every path now.
create view fabriciq.path_routes_current as
	select distinct on (node, nic, remote_node, remote_nic)
		node, nic, remote_node, remote_nic, hops, reached, first_seen, last_seen
	from fabriciq.path_routes
	order by node, nic, remote_node, remote_nic, first_seen desc, id desc;

-- Every change of a path's route: the route before and after.
create view fabriciq.route_changes as
	select * from (
		select node, nic, remote_node, remote_nic, first_seen as time,
			lag(hops) over w as hops_before, hops as hops_after,
			lag(reached) over w as reached_before, reached as reached_after
		from fabriciq.path_routes
		window w as (partition by node, nic, remote_node, remote_nic order by first_seen, id)
	) c
	where hops_before is not null;
