-- fabriciq schema, version 5: traffic control.
--
-- collision: lanes of two or more jobs delayed far above their paths'
-- probe delay on a shared NIC; the controller advises one job to move
-- (doc/fabriciq-controller.8, "The control loop"). rdma_config: a job's
-- RDMA lane that the two ends could not form (InfiniBand against RoCE,
-- RoCE v1 against v2), reported by the NCCL plugin at connect time.
alter table fabriciq.anomalies drop constraint anomalies_kind_check;
alter table fabriciq.anomalies add constraint anomalies_kind_check
	check (kind in ('link_down', 'flapping', 'path_delay', 'lane_outlier', 'inband_mismatch', 'slow_sender',
	                'slow_receiver', 'collision', 'rdma_config'));

-- A steering move (a lane re-opened on a new ECMP hash, cause 'steer') is
-- stored with the failover events, the job report lists it, but it is no
-- failure: job_efficiency.failovers leaves it out. The function is
-- version 3's but for that one condition.
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
	       (select count(*) from fabriciq.failover_events f
	        where f.job_id = p_job and f.step_id = p_step and f.cause <> 'steer')::int
	from tput, med, degraded
$$;
