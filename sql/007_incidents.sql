-- fabriciq schema, version 7: incidents, one per NIC, link or path episode.
--
-- Before, every DOWN was an anomaly and every anomaly a row on each job it
-- touched: one rail flapping 10 times under a job put a path-level
-- link_down per flap, per direction and per peer on it, and a NIC-level one
-- per flap (51 rows). The controller's detector (controller/detector.h)
-- now keeps a link_down open as an episode of its NIC or path: its DOWNs
-- are counted into it (events, last_event) until the place has been UP for
-- controller.incident_gap. A NIC's open episode is the incident of what
-- happens on that NIC: an anomaly opened on it meanwhile (flapping, a
-- path's delay, a lane outlier) is a member (incident_id), whose job steps
-- are attached to the incident; a path's DOWN through it is no anomaly at
-- all. The raw events stay: link_events (every path and NIC transition),
-- failover_events and lane_outages (every lane outage), and the members.
alter table fabriciq.anomalies add column events int not null default 1;
alter table fabriciq.anomalies add column last_event timestamptz;
alter table fabriciq.anomalies add column incident_id int8 references fabriciq.anomalies (id) on delete set null;
-- An incident's members.
create index anomalies_incident_idx on fabriciq.anomalies (incident_id) where incident_id is not null;
comment on column fabriciq.anomalies.events is
	'A link_down episode: the DOWNs of its NIC or path so far; other kinds: 1.';
comment on column fabriciq.anomalies.last_event is
	'A link_down episode: its last DOWN (null: its first was its only one).';
comment on column fabriciq.anomalies.incident_id is
	'The incident (a NIC''s link_down episode) this anomaly is part of; null: it is an incident itself.';

create view fabriciq.incidents as
select a.id, a.kind, a.severity, a.node, a.nic, a.remote_node, a.remote_nic, a.events,
       a.start_time as first_at, coalesce(a.last_event, a.start_time) as last_at, a.end_time,
       coalesce(a.end_time, now()) - a.start_time as duration,
       array(select m.kind from fabriciq.anomalies m where m.incident_id = a.id order by m.start_time, m.id)
           as member_kinds,
       a.summary
from fabriciq.anomalies a
where a.incident_id is null;

comment on view fabriciq.incidents is
	'One row per incident: an anomaly that is not part of another. A link_down is an episode of its NIC '
	'(node, nic) or path (remote_node, remote_nic set): events DOWNs from first_at to last_at, over (its '
	'place back UP) at end_time (null: still open); member_kinds: the anomalies that are part of it '
	'(fabriciq.anomalies where incident_id = id).';

-- The impact of an incident on one job step: its throughput in the
-- reporting intervals during the incident against those before it (as
-- step_efficiency measures it: bytes over interval time), and its lane
-- outages (lane_outages) that began during it on a lane through the
-- incident's NIC (either end) or path (its two NICs, either way). A function so that job_id reaches the indexes.
create function fabriciq.incident_impact(p_job int8, p_step int8, p_incident int8)
returns table (gbps_before numeric, gbps_during numeric, lanes_failed_over int, outages int)
language sql stable as $$
	with i as (
		select a.start_time as lo, coalesce(a.end_time, now()) as hi, a.node, a.nic, a.remote_node,
		       a.remote_nic
		from fabriciq.anomalies a where a.id = p_incident
	), iv as (
		select lw.interval_start as s, max(lw.interval_end) as e, sum(lw.bytes) as bytes
		from fabriciq.lane_windows lw where lw.job_id = p_job and lw.step_id = p_step
		group by lw.interval_start
	), o as (
		select o.conn_id, o.lane
		from fabriciq.lane_outages o
		join fabriciq.ranks s on s.job_id = o.job_id and s.step_id = o.step_id and s.rank = o.src_rank
		join fabriciq.ranks d on d.job_id = o.job_id and d.step_id = o.step_id and d.rank = o.dst_rank, i
		where o.job_id = p_job and o.step_id = p_step and o.down_at >= i.lo and o.down_at <= i.hi
		  and case when i.remote_node is null
		           then (s.node = i.node and o.src_nic = i.nic) or (d.node = i.node and o.dst_nic = i.nic)
		           else (s.node, o.src_nic, d.node, o.dst_nic) in ((i.node, i.nic, i.remote_node, i.remote_nic),
		                                                         (i.remote_node, i.remote_nic, i.node, i.nic))
		      end
	)
	select (select round((sum(iv.bytes) * 8 / nullif(sum(extract(epoch from iv.e - iv.s)), 0) / 1e9)::numeric, 3)
	        from iv, i where iv.e <= i.lo),
	       (select round((sum(iv.bytes) * 8 / nullif(sum(extract(epoch from iv.e - iv.s)), 0) / 1e9)::numeric, 3)
	        from iv, i where iv.s < i.hi and iv.e > i.lo),
	       (select count(*) from (select distinct o.conn_id, o.lane from o) l)::int,
	       (select count(*) from o)::int
$$;

create view fabriciq.job_incidents as
with hit as (
	select aj.job_id, aj.step_id, coalesce(a.incident_id, a.id) as incident_id, aj.ranks
	from fabriciq.anomaly_jobs aj join fabriciq.anomalies a on a.id = aj.anomaly_id
), js as (
	select distinct hit.job_id, hit.step_id, hit.incident_id from hit
)
select js.job_id, js.step_id,
       array(select distinct r from hit h, unnest(h.ranks) r
             where h.job_id = js.job_id and h.step_id = js.step_id and h.incident_id = js.incident_id
             order by r) as ranks,
       i.id as incident_id, i.kind, i.severity, i.node, i.nic, i.remote_node, i.remote_nic, i.events,
       i.first_at, i.last_at, i.end_time, i.duration, i.member_kinds, i.summary,
       m.gbps_before, m.gbps_during, m.lanes_failed_over, m.outages
from js
join fabriciq.incidents i on i.id = js.incident_id
cross join lateral fabriciq.incident_impact(js.job_id, js.step_id, i.id) m;

comment on view fabriciq.job_incidents is
	'Each incident with every job step it (or one of its members) hit, the ranks of that step it touched, '
	'and its impact on the step: Gbit/s in the reporting intervals before it and during it, and the lanes '
	'of the step that failed over during it through its NIC(s) (distinct lanes; outages: lane_outages rows). '
	'The anomalies one by one: job_anomalies; the raw events: link_events, lane_outages.';
