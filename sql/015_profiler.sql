-- fabriciq schema, version 15: the NCCL profiler plugin's telemetry.
--
-- With --fabriciq=monitor NCCL keeps its own transports and fabriciq
-- observes them through its profiler plugin (libnccl-profiler-fabriciq(7)),
-- which sends one communicator's figures per interval (proto
-- ProfilerReport), tagged by the agent with job, step and rank. Two
-- tables, beside lane_windows and partitioned like it:
--  - profiler_windows: its fixed window tables, per kind (coll, p2p_send,
--    proxy_send, step_send, net_ib, net_sock, ...), device, sub (IB opcode,
--    socket op) and id (a QP number, an fd, a peer rank, a collective):
--    events, bytes, mean and largest duration of one event over the
--    interval. A net_ib window is one QP of NCCL's own IB transport.
--  - profiler_ops: each finished collective and p2p: func, algo, proto,
--    bytes, start and end, algorithm bandwidth (bytes / duration, GB/s);
--    nranks, the communicator's size, gives its bus bandwidth.
-- Times are global when synchronised (the agent's clock page), else the
-- sender's raw monotonic clock (such rows land in the default partition).
create table fabriciq.profiler_windows (
	interval_start timestamptz not null,
	interval_end   timestamptz not null,
	job_id         int8 not null,
	step_id        int8 not null,
	rank           int not null,
	node           text not null,
	comm_hash      int8 not null,
	kind           text not null,
	device         int not null,
	sub            int not null,
	id             int8 not null,
	count          int8 not null,
	bytes          int8 not null,
	mean_ns        int8 not null,
	max_ns         int8 not null,
	synchronised   bool not null
) partition by range (interval_start);
create index profiler_windows_job_idx on fabriciq.profiler_windows (job_id, step_id, interval_start);
create table fabriciq.profiler_windows_default partition of fabriciq.profiler_windows default;

create table fabriciq.profiler_ops (
	start_time   timestamptz not null,
	end_time     timestamptz not null,
	job_id       int8 not null,
	step_id      int8 not null,
	rank         int not null,
	node         text not null,
	comm_hash    int8 not null,
	nranks       int not null, -- 0: not known (NCCL before 2.24)
	seq          int8 not null,
	func         text not null,
	algo         text not null,
	proto        text not null,
	p2p          bool not null,
	peer         int not null, -- p2p: the peer rank; -1 for a collective
	bytes        int8 not null,
	algbw_gbs    float8 not null, -- 10^9 bytes per second
	synchronised bool not null
) partition by range (start_time);
create index profiler_ops_job_idx on fabriciq.profiler_ops (job_id, step_id, start_time);
create table fabriciq.profiler_ops_default partition of fabriciq.profiler_ops default;

insert into fabriciq.timeseries_tables (name, time_column, retention) values
	('profiler_windows', 'interval_start', '30 days'),
	('profiler_ops', 'start_time', '30 days');

-- nccl-tests' bus bandwidth factor: what a collective of n ranks moves over
-- its busiest link per byte of its size (1 for p2p, broadcast, reduce).
create function fabriciq.busbw_factor(func text, n int) returns float8
language sql immutable as $$
	select case when n is null or n < 1 then null
		when func = 'AllReduce' then 2.0 * (n - 1) / n
		when func in ('AllGather', 'ReduceScatter', 'AllToAll') then (n - 1)::float8 / n
		else 1.0 end
$$;

-- A step's profiler section of the job report: per collective (func, algo,
-- proto) its ops, bytes and algorithm and bus bandwidth (mean over its
-- ops, min, max); the bus bandwidth over time (one bucket per second of
-- the step, per func); its slowest QPs (net_ib windows, by mean completion
-- time) and slowest peers (step_send windows: one network transfer to a
-- peer rank, by mean duration), five each; and the counts. Null when the
-- step has no profiler data.
create function fabriciq.step_profiler(p_job int8, p_step int8) returns json
language sql stable as $$
	with o as (select * from fabriciq.profiler_ops po where po.job_id = p_job and po.step_id = p_step),
	w as (select * from fabriciq.profiler_windows pw where pw.job_id = p_job and pw.step_id = p_step),
	ob as (select o.*, o.algbw_gbs * fabriciq.busbw_factor(o.func, o.nranks) as busbw_gbs from o),
	coll as (select ob.func, ob.algo, ob.proto, ob.p2p, count(*)::int8 as ops, sum(ob.bytes)::int8 as bytes,
		round(avg(ob.algbw_gbs)::numeric, 3) as algbw_gbs,
		round(avg(ob.busbw_gbs)::numeric, 3) as busbw_gbs,
		round(min(ob.busbw_gbs)::numeric, 3) as busbw_min_gbs,
		round(max(ob.busbw_gbs)::numeric, 3) as busbw_max_gbs,
		(extract(epoch from min(ob.start_time)) * 1e9)::int8 as first_ns,
		(extract(epoch from max(ob.end_time)) * 1e9)::int8 as last_ns
		from ob group by ob.func, ob.algo, ob.proto, ob.p2p),
	overtime as (select ob.func, date_trunc('second', ob.start_time) as t, count(*)::int8 as ops,
		round(avg(ob.busbw_gbs)::numeric, 3) as busbw_gbs, sum(ob.bytes)::int8 as bytes
		from ob where not ob.p2p group by ob.func, date_trunc('second', ob.start_time)),
	qp as (select w.node, w.rank, w.device, w.id as qpn, sum(w.count)::int8 as events,
		sum(w.bytes)::int8 as bytes,
		(sum(w.mean_ns * w.count) / nullif(sum(w.count), 0))::int8 as mean_ns, max(w.max_ns) as max_ns
		from w where w.kind = 'net_ib' group by w.node, w.rank, w.device, w.id),
	peer as (select w.node, w.rank, w.id as peer, sum(w.count)::int8 as transfers,
		sum(w.bytes)::int8 as bytes,
		(sum(w.mean_ns * w.count) / nullif(sum(w.count), 0))::int8 as mean_ns, max(w.max_ns) as max_ns,
		round((sum(w.bytes) / nullif(sum(w.mean_ns * w.count), 0))::numeric, 3) as gbs
		from w where w.kind = 'step_send' group by w.node, w.rank, w.id)
	select case when not exists (select 1 from o) and not exists (select 1 from w) then null
	else json_build_object(
		'ops', (select count(*) from o),
		'windows', (select count(*) from w),
		'ranks', (select count(distinct r) from (select rank as r from o union select rank from w) x),
		'synchronised', coalesce((select bool_and(synchronised) from o), true)
			and coalesce((select bool_and(synchronised) from w), true),
		'collectives', (select coalesce(json_agg(c order by c.p2p, c.func, c.algo, c.proto), '[]') from coll c),
		'busbw_over_time', (select coalesce(json_agg(json_build_object('func', t.func,
			'start_ns', (extract(epoch from t.t) * 1e9)::int8, 'ops', t.ops, 'bytes', t.bytes,
			'busbw_gbs', t.busbw_gbs) order by t.t, t.func), '[]') from overtime t),
		'slowest_qps', (select coalesce(json_agg(q order by q.mean_ns desc, q.node, q.rank, q.qpn), '[]')
			from (select * from qp order by qp.mean_ns desc nulls last, qp.node, qp.rank, qp.qpn limit 5) q),
		'slowest_peers', (select coalesce(json_agg(p order by p.mean_ns desc, p.rank, p.peer), '[]')
			from (select * from peer order by peer.mean_ns desc nulls last, peer.rank, peer.peer limit 5) p))
	end
$$;
comment on function fabriciq.step_profiler(int8, int8) is
	'The job report''s profiler section of one step (NCCL profiler plugin): per-collective bus bandwidth, over time, slowest QPs and peers.';

-- job_efficiency with the profiler's figures beside the lanes' (a step
-- monitored through the profiler has no lane windows): its op records,
-- their mean bus bandwidth over the collectives, and its slowest peer.
create or replace view fabriciq.job_efficiency as
select e.*, p.profiler_ops, p.profiler_busbw_gbs, p.profiler_slowest_peer
from fabriciq.steps s
cross join lateral fabriciq.step_efficiency(s.job_id, s.step_id) e
cross join lateral (select
	(select count(*) from fabriciq.profiler_ops o
	 where o.job_id = s.job_id and o.step_id = s.step_id)::int8 as profiler_ops,
	(select round(avg(o.algbw_gbs * fabriciq.busbw_factor(o.func, o.nranks))::numeric, 3)
	 from fabriciq.profiler_ops o where o.job_id = s.job_id and o.step_id = s.step_id and not o.p2p)
	 as profiler_busbw_gbs,
	(select w.rank || '->' || w.id || ' ' ||
		round(sum(w.mean_ns * w.count)::numeric / nullif(sum(w.count), 0) / 1000, 1) || ' us'
	 from fabriciq.profiler_windows w
	 where w.job_id = s.job_id and w.step_id = s.step_id and w.kind = 'step_send'
	 group by w.rank, w.id
	 order by sum(w.mean_ns * w.count)::float8 / nullif(sum(w.count), 0) desc nulls last, w.rank, w.id
	 limit 1) as profiler_slowest_peer) p;
comment on column fabriciq.job_efficiency.profiler_ops is
	'Collectives and p2ps the NCCL profiler plugin recorded for the step (0: none; monitor through the profiler).';
comment on column fabriciq.job_efficiency.profiler_busbw_gbs is
	'Mean bus bandwidth of the step''s collectives as the profiler recorded them, 10^9 bytes/s (nccl-tests'' busbw).';
comment on column fabriciq.job_efficiency.profiler_slowest_peer is
	'The slowest peer by mean network transfer time, as "rank->peer mean us".';
