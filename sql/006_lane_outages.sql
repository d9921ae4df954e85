-- fabriciq schema, version 6: lane outages, one row per outage.
--
-- Both ends of a control-mode connection report what they notice of a
-- lane (proto FailoverEvent): the sender when it fails the lane over, the
-- receiver when it sees the lane's path DOWN or its peer silent (an idle
-- sender may notice nothing), each with the lane's failure and, once it is
-- back, its failback. One outage seen by both ends is two failures and two
-- failbacks; a job report that counted rows counted it up to four times,
-- and one that counted the sender's rows missed the outages only the
-- receiver saw. conn_id and is_send say which connection and which end.
alter table fabriciq.failover_events add column conn_id int8 not null default 0;
alter table fabriciq.failover_events add column is_send bool not null default true;
comment on column fabriciq.failover_events.conn_id is
	'The connection (the id both of its ends know it by); 0 from a plugin before schema 6.';
comment on column fabriciq.failover_events.is_send is
	'true: reported by the sending end (node, local_nic are the sender''s); false: by the receiving end.';

-- Each end's outages of a lane: a failure and that end's next failback of
-- the same lane (none yet: back_at is null, the lane never came back
-- before the connection ended or is still out).
create view fabriciq.lane_outage_reports as
select d.job_id, d.step_id, d.conn_id, d.from_lane as lane, d.is_send, d.time as down_at, b.time as back_at,
       d.cause, d.node, d.local_nic, d.remote_nic, d.src_rank, d.dst_rank, d.detect_ns, d.bytes_resent
from fabriciq.failover_events d
left join lateral (
	select f.time from fabriciq.failover_events f
	where f.failback and f.job_id = d.job_id and f.step_id = d.step_id and f.conn_id = d.conn_id
	  and f.from_lane = d.from_lane and f.is_send = d.is_send and f.time >= d.time
	order by f.time limit 1) b on true
where not d.failback and d.cause <> 'steer';

-- One row per outage of a lane: the two ends' reports of a lane whose
-- intervals overlap are one outage (the ends' clocks are the agents'
-- global clock). The sender's cause wins (it acted on it); the NICs are
-- named by direction (the sending rank's NIC, the receiving rank's).
create view fabriciq.lane_outages as
with r as (
	select *, coalesce(back_at, down_at) as end_at,
	       case when is_send then local_nic else remote_nic end as src_nic,
	       case when is_send then remote_nic else local_nic end as dst_nic
	from fabriciq.lane_outage_reports
), o as (
	select r.*, max(r.end_at) over (partition by r.job_id, r.step_id, r.conn_id, r.lane
	                                order by r.down_at, r.is_send
	                                rows between unbounded preceding and 1 preceding) as prev_end
	from r
), g as (
	select o.*, sum(case when o.prev_end is null or o.down_at > o.prev_end then 1 else 0 end)
	            over (partition by o.job_id, o.step_id, o.conn_id, o.lane
	                  order by o.down_at, o.is_send rows unbounded preceding) as outage
	from o
)
select g.job_id, g.step_id, g.conn_id, g.lane,
       min(g.down_at) as down_at,
       case when bool_and(g.back_at is not null) then max(g.back_at) end as back_at,
       case when bool_and(g.back_at is not null)
            then (extract(epoch from max(g.back_at) - min(g.down_at)) * 1e9)::int8 end as out_ns,
       min(g.src_rank) as src_rank, min(g.dst_rank) as dst_rank,
       coalesce(min(g.src_nic) filter (where g.is_send), min(g.src_nic)) as src_nic,
       coalesce(min(g.dst_nic) filter (where g.is_send), min(g.dst_nic)) as dst_nic,
       coalesce(min(g.cause) filter (where g.is_send), min(g.cause)) as cause,
       case when bool_and(g.is_send) then 'sender' when bool_or(g.is_send) then 'both' else 'receiver' end
           as seen_by,
       min(g.detect_ns) filter (where g.is_send) as detect_ns,
       coalesce(sum(g.bytes_resent) filter (where g.is_send), 0)::int8 as bytes_resent
from g
group by g.job_id, g.step_id, g.conn_id, g.lane, g.outage;

comment on view fabriciq.lane_outages is
	'One row per outage of a job''s lane (a failover): when it failed, when it was back (null: never, or '
	'not yet), how long it was out, the sending and receiving ranks and NICs, the cause, which end saw it '
	'(sender, receiver, both) and the bytes resent. The raw reports of both ends are in failover_events.';

-- job_efficiency.failovers counts outages (version 5 counted every row
-- but the steering moves: failbacks and both ends' reports too).
create or replace function fabriciq.step_efficiency(p_job int8, p_step int8)
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
	       (select count(*) from fabriciq.lane_outages o
	        where o.job_id = p_job and o.step_id = p_step)::int
	from tput, med, degraded
$$;
