-- fabriciq schema, version 3: the views users query in psql (doc/queries.md).

-- The efficiency of one step, from its lane windows. A function rather than
-- view text so that `where job_id = X` reaches the lane_windows_job_idx
-- index: job_efficiency calls it once per row of fabriciq.steps.
--
-- Throughput is measured per reporting interval (lane windows with the same
-- interval_start): the step's aggregate bytes / interval length. "achieved"
-- is all bytes over all interval time; "best" the best interval. A lane's
-- delay is the median of its windows' p99 one-way delay; a window is
-- degraded when its p99 exceeds degraded_owd_factor x the median p99 of all
-- the step's windows. Unsynchronised windows (local stamps) carry no delay.
create function fabriciq.step_efficiency(p_job int8, p_step int8)
returns table (job_id int8, step_id int8, first_interval timestamptz, last_interval timestamptz,
               lanes int, bytes int8, achieved_gbps numeric, best_gbps numeric, efficiency numeric,
               degraded_share numeric, median_lane_p99_us numeric, slowest_lane_p99_us numeric,
               slowest_lanes text[], anomalies int, failovers int)
language sql stable as $$
	with w as (
		select * from fabriciq.lane_windows lw where lw.job_id = p_job and lw.step_id = p_step
	), intervals as (
		select sum(w.bytes) as bytes,
		       extract(epoch from max(w.interval_end) - w.interval_start)::float8 as secs
		from w group by w.interval_start
	), med as (
		select percentile_cont(0.5) within group (order by w.owd_p99_ns) as p99
		from w where w.synchronised and w.owd_p99_ns is not null
	), lane as (
		select w.src_rank, w.dst_rank, w.lane,
		       percentile_cont(0.5) within group (order by w.owd_p99_ns) as p99
		from w where w.synchronised and w.owd_p99_ns is not null
		group by w.src_rank, w.dst_rank, w.lane
	), degraded as (
		select count(distinct w.interval_start) as n
		from w, med
		where w.synchronised and w.owd_p99_ns > med.p99 *
			(select value::float8 from fabriciq.settings where name = 'degraded_owd_factor')
	), tput as (
		select sum(i.bytes) * 8 / nullif(sum(i.secs), 0) / 1e9 as achieved,
		       max(i.bytes * 8 / nullif(i.secs, 0)) / 1e9 as best,
		       count(*) as n
		from intervals i
	)
	select p_job, p_step,
	       (select min(w.interval_start) from w),
	       (select max(w.interval_end) from w),
	       (select count(*) from (select distinct w.src_rank, w.dst_rank, w.lane from w) l)::int,
	       (select sum(w.bytes) from w)::int8,
	       round(tput.achieved::numeric, 3),
	       round(tput.best::numeric, 3),
	       round((tput.achieved / nullif(tput.best, 0))::numeric, 3),
	       round(degraded.n::numeric / nullif(tput.n, 0), 3),
	       round((med.p99 / 1000)::numeric, 1),
	       (select round((max(lane.p99) / 1000)::numeric, 1) from lane),
	       array(select format('%s->%s/%s %s us', lane.src_rank, lane.dst_rank, lane.lane,
	                           round((lane.p99 / 1000)::numeric, 1))
	             from lane order by lane.p99 desc, lane.src_rank, lane.dst_rank, lane.lane limit 3),
	       (select count(*) from fabriciq.anomaly_jobs aj
	        where aj.job_id = p_job and aj.step_id = p_step)::int,
	       (select count(*) from fabriciq.failover_events f
	        where f.job_id = p_job and f.step_id = p_step)::int
	from tput, med, degraded
$$;

create view fabriciq.job_efficiency as
select e.*
from fabriciq.steps s
cross join lateral fabriciq.step_efficiency(s.job_id, s.step_id) e;

comment on view fabriciq.job_efficiency is
	'Per Slurm job step (one row per fabriciq.steps row): bytes moved over the fabric, achieved vs best-observed '
	'aggregate throughput, the share of reporting intervals with a degraded lane, the slowest lanes, and the '
	'anomalies and failovers that hit it. Filter with WHERE job_id = N.';
comment on column fabriciq.job_efficiency.achieved_gbps is
	'All bytes of the step over all reporting-interval time, in Gbit/s.';
comment on column fabriciq.job_efficiency.best_gbps is
	'The best single reporting interval''s aggregate throughput, in Gbit/s.';
comment on column fabriciq.job_efficiency.efficiency is 'achieved_gbps / best_gbps.';
comment on column fabriciq.job_efficiency.degraded_share is
	'Share of reporting intervals in which some lane''s p99 one-way delay exceeded degraded_owd_factor '
	'(fabriciq.settings) times the step''s median window p99.';
comment on column fabriciq.job_efficiency.median_lane_p99_us is
	'Median p99 one-way delay over all synchronised lane windows of the step, in microseconds.';
comment on column fabriciq.job_efficiency.slowest_lanes is
	'Up to three lanes, slowest first, as "src_rank->dst_rank/lane p99 us" (a lane''s p99 is the median of its windows'' p99).';

-- Per probed path: flaps and loss over the last hour/day, delays over the last hour.
-- A flap is a transition to down, of the path itself or of its whole source NIC.
create view fabriciq.link_health as
select l.src_node, l.src_nic, l.dst_node, l.dst_nic, l.state, l.state_since,
       f.flaps_1h, f.flaps_24h,
       p.windows_1h, p.sent_1h, p.lost_1h,
       round(p.lost_1h::numeric / nullif(p.sent_1h, 0), 4) as loss_1h,
       round((p.fwd_p50 / 1000)::numeric, 1) as owd_fwd_p50_us,
       round((p.fwd_p99 / 1000)::numeric, 1) as owd_fwd_p99_us,
       round((p.rev_p50 / 1000)::numeric, 1) as owd_rev_p50_us,
       round((p.rev_p99 / 1000)::numeric, 1) as owd_rev_p99_us,
       round((p.rtt_p50 / 1000)::numeric, 1) as rtt_p50_us
from fabriciq.links l
cross join lateral (
	select (count(*) filter (where e.time >= now() - interval '1 hour'))::int as flaps_1h,
	       count(*)::int as flaps_24h
	from fabriciq.link_events e
	where e.node = l.src_node and e.nic = l.src_nic and e.state = 'down'
	  and (e.nic_level or (e.remote_node = l.dst_node and e.remote_nic = l.dst_nic))
	  and e.time >= now() - interval '1 day'
) f
cross join lateral (
	select count(*)::int as windows_1h,
	       sum(w.sent)::int8 as sent_1h,
	       sum(w.lost)::int8 as lost_1h,
	       percentile_cont(0.5) within group (order by w.owd_fwd_p50_ns) as fwd_p50,
	       percentile_cont(0.99) within group (order by w.owd_fwd_p99_ns) as fwd_p99,
	       percentile_cont(0.5) within group (order by w.owd_rev_p50_ns) as rev_p50,
	       percentile_cont(0.99) within group (order by w.owd_rev_p99_ns) as rev_p99,
	       percentile_cont(0.5) within group (order by w.rtt_p50_ns) as rtt_p50
	from fabriciq.probe_windows w
	where w.src_node = l.src_node and w.src_nic = l.src_nic
	  and w.dst_node = l.dst_node and w.dst_nic = l.dst_nic
	  and w.window_start >= now() - interval '1 hour'
) p;

comment on view fabriciq.link_health is
	'Per probed path (fabriciq.links): state, flaps (down transitions of the path or of its source NIC) in the '
	'last hour and day, probe loss and one-way delay over the last hour.';
comment on column fabriciq.link_health.loss_1h is 'lost / sent probes over the last hour.';
comment on column fabriciq.link_health.owd_fwd_p50_us is
	'Median of the last hour''s window medians, source to destination, in microseconds.';
comment on column fabriciq.link_health.owd_fwd_p99_us is
	'99th percentile of the last hour''s window p99s, source to destination, in microseconds.';

create view fabriciq.job_anomalies as
select aj.job_id, aj.step_id, aj.ranks, a.id as anomaly_id, a.kind, a.severity,
       a.start_time, a.end_time, coalesce(a.end_time, now()) - a.start_time as duration,
       a.node, a.nic, a.remote_node, a.remote_nic, a.summary, a.evidence
from fabriciq.anomaly_jobs aj
join fabriciq.anomalies a on a.id = aj.anomaly_id;

comment on view fabriciq.job_anomalies is
	'Each anomaly with every job step it hit and the ranks of that step it touched; end_time NULL: still open.';

-- Per node: its latest clock report. Every row of one report carries the
-- same reported_at (the controller stamps a ClockReport once).
create view fabriciq.clock_status as
select n.name as node, c.reported_at as last_report, now() - c.reported_at as report_age,
       c.applied_offset_ns, c.applied_error_ns, c.correction_epoch, c.peers, c.worst_peer_error_ns,
       case when c.reported_at is null then 'no reports'
            when now() - c.reported_at > s.stale then 'stale'
            when c.correction_epoch = 0 or c.applied_error_ns > s.budget then 'unsynchronised'
            else 'ok' end as status
from fabriciq.nodes n
cross join (select (select value::interval from fabriciq.settings where name = 'clock_stale_after') as stale,
                   (select value::int8 from fabriciq.settings where name = 'clock_error_budget_ns') as budget) s
left join lateral (
	select e.reported_at, max(e.applied_offset_ns) as applied_offset_ns, max(e.applied_error_ns) as applied_error_ns,
	       max(e.correction_epoch) as correction_epoch, count(*)::int as peers,
	       max(e.error_bound_ns) as worst_peer_error_ns
	from fabriciq.clock_estimates e
	where e.node = n.name
	  and e.reported_at = (select max(x.reported_at) from fabriciq.clock_estimates x where x.node = n.name)
	group by e.reported_at
) c on true;

comment on view fabriciq.clock_status is
	'Per node: its latest clock report (applied offset and error bound, last correction epoch, peers measured) and a '
	'status: ok, stale (older than clock_stale_after), unsynchronised (no correction yet, or error above '
	'clock_error_budget_ns) or no reports.';
