-- fabriciq schema, version 12: an incident's lane outages include those
-- that began up to 5 s after it ended.
--
-- A lane whose TCP connection broke while its link was down is often
-- noticed only once the link is back: its receiver reads the reset after
-- the UP (seen: a receiver's socket-error 0.64 s after a flapping rail's
-- last UP, which the incident did not count). Version 7's function but for
-- that bound; an episode of the same NIC or path that comes back within its
-- 30 s gap is the same incident, so the slack takes no other incident's.
create or replace function fabriciq.incident_impact(p_job int8, p_step int8, p_incident int8)
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
		where o.job_id = p_job and o.step_id = p_step and o.down_at >= i.lo
		  and o.down_at <= i.hi + interval '5 seconds'
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
