# Sourced by tests/controller/test-api.sh and test-cli*.sh: loads the API's
# test data set into the database in PG* (schema already migrated). Times
# are relative to now(), so the views' "last hour" windows see them.
#
# Job 4242: step 0 (control, running) with 4 ranks on gpu01..gpu04, a ring
# of 8 lanes (rank r -> r+1, lanes 0 and 1) over three 1 s intervals, 500 MB
# per lane window; lane 0->1/1 is slow (p99 4, 94, 49 us; 100 MB in the
# second interval) and failed over once. Step 1 ended (exit 1), no lanes.
# Expected (tests check them): 11.6 GB; 32, 28.8, 32 Gbit/s per interval;
# achieved 30.933 Gbit/s, best 32, degraded share 0.667, slowest lane
# 0->1/1 p99 49 us against a 4 us median.
load_fixture() {
	command psql -X -q -v ON_ERROR_STOP=1 <<'SQL'
begin;
create temporary table t0 as select date_trunc('second', now()) - interval '10 minutes' as t;

insert into fabriciq.nodes (name, agent_version, boot_id, first_seen, last_seen)
select 'gpu0' || i, '0.1.0', 'boot-' || i, now() - interval '1 day', now() - interval '5 seconds'
from generate_series(1, 4) i;
update fabriciq.nodes set last_seen = now() - interval '3 hours' where name = 'gpu04';
insert into fabriciq.nics (node, name, address, rail, speed_mbps, kind, front_end, first_seen, last_seen)
select 'gpu0' || i, n.name, n.addr || i, n.rail, n.speed, n.kind, n.fe, now() - interval '1 day', now()
from generate_series(1, 4) i,
     (values ('mlx5_0', '198.18.0.', 0, 100000, 'roce', false), ('mlx5_1', '198.18.1.', 1, 100000, 'roce', false),
             ('eth0', '10.0.0.', 0, 10000, 'ethernet', true)) n(name, addr, rail, speed, kind, fe);

insert into fabriciq.links values
	('gpu01', 'mlx5_0', 'gpu02', 'mlx5_0', 'up', now() - interval '5 minutes', now() - interval '1 day', now()),
	('gpu03', 'mlx5_1', 'gpu04', 'mlx5_1', 'down', now() - interval '30 minutes', now() - interval '1 day', now()),
	('gpu02', 'mlx5_0', 'gpu03', 'mlx5_0', 'up', now() - interval '1 day', now() - interval '1 day', now());
insert into fabriciq.probe_windows
select now() - interval '20 minutes' + k * interval '1 second', now() - interval '20 minutes' + (k + 1) * interval '1 second',
       'gpu01', 'mlx5_0', 'gpu02', 'mlx5_0', 100, 100 - l, l, 4000, 5000 + k * 1000, 8000, 9000,
       4000, 5000, 8000, 9000, 10000, 'software', true, k
from (values (0, 5), (1, 5)) v(k, l);
-- three path-level flaps of gpu01/mlx5_0 -> gpu02 in the last hour, a NIC-level one on gpu03/mlx5_1
insert into fabriciq.link_events
select now() - (k * 10 + 5) * interval '1 minute' + d * interval '2 seconds', now() - (k * 10 + 5) * interval '1 minute' + d * interval '2 seconds' + interval '300 ms',
       'gpu01', 'mlx5_0', 'gpu02', 'mlx5_0', case d when 0 then 'down' else 'up' end, 'probe', false
from generate_series(0, 2) k, generate_series(0, 1) d;
insert into fabriciq.link_events values
	(now() - interval '30 minutes', now() - interval '30 minutes' + interval '5 ms', 'gpu03', 'mlx5_1', null, null, 'down', 'carrier', true);

insert into fabriciq.jobs values (4242, 1000, now() - interval '1 hour', now());
insert into fabriciq.steps values
	(4242, 0, 'control', 4, 4, (select t from t0) - interval '1 minute', null, null),
	(4242, 1, 'monitor', 2, 2, now() - interval '1 hour', now() - interval '50 minutes', 1);
insert into fabriciq.ranks
select 4242, 0, r, 0, 'gpu0' || (r + 1), 'mlx5_0', 1000 + r from generate_series(0, 3) r;
insert into fabriciq.ranks values (4242, 1, 0, 0, 'gpu01', null, 900), (4242, 1, 1, 0, 'gpu02', null, 901);
insert into fabriciq.lane_windows
select t0.t + k * interval '1 second', t0.t + (k + 1) * interval '1 second', 4242, 0, r, (r + 1) % 4, lane, 'tcp',
       'gpu0' || (r + 1), 'mlx5_' || lane, 'gpu0' || ((r + 1) % 4 + 1), 'mlx5_' || lane,
       case when slow and k = 1 then 100000000 else 500000000 end, 1000, 100,
       1000, case when slow and k > 0 then 30000 else 2000 end,
       case when not slow then 4000 when k = 0 then 4000 when k = 1 then 94000 else 49000 end, 100000,
       50, case when slow then 7 else 0 end, 0, true
from t0, generate_series(0, 2) k, generate_series(0, 3) r, generate_series(0, 1) lane,
     lateral (select r = 0 and lane = 1 as slow) s;
-- QoS: step 0 in class latency; rank 0's two lanes paced in windows 1
-- and 2 (1.25 then 2.5 MB/s), each capped half a second of its second
update fabriciq.steps set net_class = 'latency' where job_id = 4242 and step_id = 0;
update fabriciq.lane_windows set pacing_rate = case when interval_start = (select t from t0) + interval '1 second'
	then 1250000 else 2500000 end, throttled_ns = 500000000
where job_id = 4242 and step_id = 0 and src_rank = 0 and interval_start > (select t from t0);
-- ... and the controller gave its lane 0 a rate of 1.25 MB/s in window 1
-- for half a second (rates between classes, schema 19)
update fabriciq.lane_windows set assigned_rate = 1250000, assigned_ns = 500000000
where job_id = 4242 and step_id = 0 and src_rank = 0 and lane = 0
	and interval_start = (select t from t0) + interval '1 second';
insert into fabriciq.failover_events values
	((select t from t0) + interval '1.5 seconds', 4242, 0, 0, 1, 1, 0, 'gpu01', 'mlx5_1', 'mlx5_1', 'no-progress',
	 250000000, 4194304, 300000000, false),
	((select t from t0) + interval '1.8 seconds', 4242, 0, 0, 1, 1, 1, 'gpu01', 'mlx5_1', 'mlx5_1', 'failback',
	 0, 0, 300000000, true);

with a as (
	insert into fabriciq.anomalies (kind, severity, start_time, end_time, node, nic, remote_node, remote_nic, summary, evidence)
	values ('lane_outlier', 'warning', (select t from t0) + interval '1 second', null, 'gpu01', 'mlx5_1', 'gpu02', 'mlx5_1',
	        'lane 0->1/1 p99 94 us vs job median 4 us', '{"p99_us": 94, "median_us": 4}')
	returning id)
insert into fabriciq.anomaly_jobs select id, 4242, 0, '{0,1}' from a;
with a as (
	insert into fabriciq.anomalies (kind, severity, start_time, end_time, node, nic, remote_node, remote_nic, summary)
	values ('flapping', 'critical', now() - interval '25 minutes', now() - interval '5 minutes', 'gpu01', 'mlx5_0', 'gpu02', 'mlx5_0',
	        E'3 flaps/h: it''s "bad" \\ ; drop table x; -- <b>&amp; é 日本')
	returning id)
insert into fabriciq.anomaly_jobs select id, 4242, 0, '{0}' from a;
insert into fabriciq.anomalies (kind, severity, start_time, node, nic, summary)
values ('link_down', 'critical', now() - interval '30 minutes', 'gpu03', 'mlx5_1', 'gpu03/mlx5_1 carrier lost');

insert into fabriciq.drain_hints (node, nic, action, reason, anomaly_id, created_at, applied_at) values
	('gpu03', 'mlx5_1', 'drain', 'link_down on mlx5_1', (select id from fabriciq.anomalies where kind = 'link_down'),
	 now() - interval '29 minutes', null),
	('gpu01', 'mlx5_0', 'drain', 'flapping mlx5_0', (select id from fabriciq.anomalies where kind = 'flapping'),
	 now() - interval '20 minutes', null),
	('gpu01', 'mlx5_0', 'resume', 'mlx5_0 stable for 5 minutes', null, now() - interval '2 minutes', null),
	('gpu02', null, 'drain', 'old, already applied', null, now() - interval '2 hours', now() - interval '1 hour'),
	('gpu0$(reboot)', null, 'drain', 'name from a broken agent "x"', null, now() - interval '1 minute', null);

insert into fabriciq.clock_estimates
select now() - interval '5 seconds', 'gpu01', p, 1200, 0.5, 300 + i, 64, 1, 2, 1200, 500, 3
from (values ('gpu02', 0), ('gpu03', 100)) v(p, i);
insert into fabriciq.clock_estimates values
	(now() - interval '2 hours', 'gpu02', 'gpu01', 10, 0.1, 200, 64, 1, 2, 10, 100, 3),
	(now() - interval '3 seconds', 'gpu03', 'gpu01', 50000, 2.0, 40000, 8, 1, 2, 50000, 30000, 0);
commit;
SQL
}
