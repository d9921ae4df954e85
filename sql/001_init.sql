-- fabriciq schema, version 1: topology, Slurm jobs, telemetry, anomalies.
--
-- Applied by `fabriciq-db migrate` (db/migrate.c) inside one transaction,
-- which also records the version in fabriciq.schema_version. Never edit a
-- released migration: add sql/NNN_what.sql instead.
--
-- Conventions
-- * Times are timestamptz (microsecond resolution). The wire carries int64
--   ns since the epoch; no int8 ns copy of a wall-clock time is kept: the
--   partition key and every query want timestamptz, and the sub-microsecond
--   part of a window boundary carries no information (windows last 0.1-10 s).
--   Durations and delays are int8 nanoseconds (`*_ns`): a one-way delay of
--   4 us must not be rounded. The only int8 ns times are the agents' local
--   CLOCK_MONOTONIC_RAW readings in clock_estimates, which are not wall-clock
--   times at all.
-- * Nodes and NICs are named by their natural keys (Slurm node name, netdev
--   or verbs device name) in the telemetry tables, without foreign keys:
--   telemetry may arrive before the agent's hello is stored, and a COPY batch
--   must not fail because of it. nodes/nics/links are the learned topology.
-- * Time-series tables are range partitioned by day (UTC) with native
--   partitioning. pg_partman is not used: what we need (create the next days,
--   drop what is past retention) is two short plpgsql functions below, while
--   pg_partman would add a server-side extension to install (superuser,
--   shared_preload_libraries for its background worker) on every site's
--   database for no feature we use. Each table also has a DEFAULT partition
--   so that a row for a day nobody created is stored, never refused;
--   create_partitions() moves such rows into the day's partition.

create schema if not exists fabriciq;

-- Written by the migrator; one row per applied migration.
create table fabriciq.schema_version (
	version    int primary key,
	name       text not null,
	applied_at timestamptz not null default now()
);

-- Thresholds the views use; change them with UPDATE.
create table fabriciq.settings (
	name        text primary key,
	value       text not null,
	description text not null
);
insert into fabriciq.settings (name, value, description) values
	('degraded_owd_factor', '4',
	 'a lane window is degraded when its p99 one-way delay exceeds this factor times the step''s median lane p99'),
	('clock_stale_after', '2 minutes',
	 'clock_status: a node whose last clock report is older than this is stale'),
	('clock_error_budget_ns', '10000',
	 'clock_status: a node whose applied error bound exceeds this (ns) is unsynchronised'),
	('partition_premake_days', '7',
	 'maintain_partitions(): daily partitions created ahead of today (UTC)');

-- The time-series tables, their partition key and how long their data is kept.
create table fabriciq.timeseries_tables (
	name        text primary key,
	time_column text not null,
	retention   interval not null check (retention >= interval '1 day')
);
insert into fabriciq.timeseries_tables (name, time_column, retention) values
	('probe_windows', 'window_start', '30 days'),
	('lane_windows', 'interval_start', '30 days'),
	('clock_estimates', 'reported_at', '30 days'),
	('link_events', 'time', '365 days');

-- Topology as learned from the agents ------------------------------------

create table fabriciq.nodes (
	name          text primary key,
	agent_version text,
	boot_id       text,
	first_seen    timestamptz not null,
	last_seen     timestamptz not null
);

create table fabriciq.nics (
	node       text not null references fabriciq.nodes (name) on delete cascade,
	name       text not null,
	address    text,
	rail       int not null,
	speed_mbps int8 not null default 0,
	kind       text not null check (kind in ('unknown', 'ethernet', 'roce', 'infiniband')),
	front_end  bool not null default false,
	guid       text,
	first_seen timestamptz not null,
	last_seen  timestamptz not null,
	primary key (node, name)
);

-- A probed path between two NICs, and its last known state.
create table fabriciq.links (
	src_node    text not null,
	src_nic     text not null,
	dst_node    text not null,
	dst_nic     text not null,
	state       text not null check (state in ('unknown', 'up', 'down')),
	state_since timestamptz not null,
	first_seen  timestamptz not null,
	last_seen   timestamptz not null,
	primary key (src_node, src_nic, dst_node, dst_nic)
);

-- Slurm --------------------------------------------------------------------

-- Slurm job and step ids are uint32 (steps use 0xfffffffX for batch/extern):
-- int8 holds them without sign games.
create table fabriciq.jobs (
	job_id     int8 primary key,
	uid        int8 not null,
	first_seen timestamptz not null,
	last_seen  timestamptz not null
);

create table fabriciq.steps (
	job_id      int8 not null references fabriciq.jobs (job_id) on delete cascade,
	step_id     int8 not null,
	mode        text not null default 'monitor' check (mode in ('monitor', 'control')),
	node_count  int not null default 0,
	task_count  int not null default 0,
	start_time  timestamptz not null,
	end_time    timestamptz,
	exit_status int,
	primary key (job_id, step_id)
);

create table fabriciq.ranks (
	job_id     int8 not null,
	step_id    int8 not null,
	rank       int not null,
	local_rank int not null,
	node       text not null,
	nic        text,
	pid        int not null,
	primary key (job_id, step_id, rank),
	foreign key (job_id, step_id) references fabriciq.steps on delete cascade
);
-- "Which jobs run on node X" (drain hints, anomaly attachment).
create index ranks_node_idx on fabriciq.ranks (node);

-- Telemetry (partitioned by day) -------------------------------------------

-- One row per (local NIC, remote NIC) probe window reported by an agent.
create table fabriciq.probe_windows (
	window_start   timestamptz not null,
	window_end     timestamptz not null,
	src_node       text not null,
	src_nic        text not null,
	dst_node       text not null,
	dst_nic        text not null,
	sent           int not null,
	answered       int not null,
	lost           int not null,
	owd_fwd_min_ns int8,
	owd_fwd_p50_ns int8,
	owd_fwd_p99_ns int8,
	owd_fwd_max_ns int8,
	owd_rev_min_ns int8,
	owd_rev_p50_ns int8,
	owd_rev_p99_ns int8,
	owd_rev_max_ns int8,
	rtt_p50_ns     int8,
	timestamp_kind text not null check (timestamp_kind in ('unknown', 'software', 'hardware', 'user')),
	path_up        bool not null,
	agent_seq      int8 not null
) partition by range (window_start);
-- link_health and the delay rules read one path over the last hour or day.
create index probe_windows_path_idx on fabriciq.probe_windows (src_node, src_nic, dst_node, dst_nic, window_start);
-- Rows arrive in time order, so a BRIN index (a few pages per day) serves
-- "everything in the last N minutes" scans at almost no ingest cost.
create index probe_windows_time_brin on fabriciq.probe_windows using brin (window_start);

-- One row per (job, step, src rank, dst rank, lane) interval from the NCCL plugin.
create table fabriciq.lane_windows (
	interval_start timestamptz not null,
	interval_end   timestamptz not null,
	job_id         int8 not null,
	step_id        int8 not null,
	src_rank       int not null,
	dst_rank       int not null,
	lane           int not null,
	lane_kind      text not null,
	src_node       text not null,
	src_nic        text not null,
	dst_node       text not null,
	dst_nic        text not null,
	bytes          int8 not null,
	chunks         int8 not null,
	messages       int8 not null,
	owd_min_ns     int8,
	owd_p50_ns     int8,
	owd_p99_ns     int8,
	owd_max_ns     int8,
	tcp_rtt_us     int,
	tcp_retrans    int,
	tcp_ce         int,
	synchronised   bool not null
) partition by range (interval_start);
-- job_efficiency / `fabriciq job`: all lanes of one step, in time order.
create index lane_windows_job_idx on fabriciq.lane_windows (job_id, step_id, interval_start);
-- Anomaly attachment: which jobs' lanes left this NIC during [start, end].
create index lane_windows_nic_idx on fabriciq.lane_windows (src_node, src_nic, interval_start);

-- Pairwise clock estimates. window_start/end_local_ns are the agent's
-- CLOCK_MONOTONIC_RAW readings (not wall time), so the partition key is the
-- controller's receive time. applied_* repeat the agent's state at report
-- time on each of its rows, so clock_status needs no second table.
create table fabriciq.clock_estimates (
	reported_at           timestamptz not null,
	node                  text not null,
	peer_node             text not null,
	offset_ns             int8 not null,
	drift_ppb             float8 not null,
	error_bound_ns        int8 not null,
	samples               int not null,
	window_start_local_ns int8 not null,
	window_end_local_ns   int8 not null,
	applied_offset_ns     int8 not null,
	applied_error_ns      int8 not null,
	correction_epoch      int8 not null
) partition by range (reported_at);
-- clock_status: the latest report of each node.
create index clock_estimates_node_idx on fabriciq.clock_estimates (node, reported_at);

-- Path- or NIC-level up/down transitions.
create table fabriciq.link_events (
	time        timestamptz not null,
	detected_at timestamptz not null,
	node        text not null,
	nic         text not null,
	remote_node text,
	remote_nic  text,
	state       text not null check (state in ('unknown', 'up', 'down')),
	detector    text not null,
	nic_level   bool not null
) partition by range (time);
-- link_health and the flapping rule count one NIC's transitions over an hour/day.
create index link_events_nic_idx on fabriciq.link_events (node, nic, time);

-- Events and conclusions (low volume, not partitioned) ----------------------

create table fabriciq.failover_events (
	time         timestamptz not null,
	job_id       int8 not null,
	step_id      int8 not null,
	src_rank     int not null,
	dst_rank     int not null,
	from_lane    int not null,
	to_lane      int not null,
	node         text not null,
	local_nic    text not null,
	remote_nic   text not null,
	cause        text not null,
	detect_ns    int8 not null,
	bytes_resent int8 not null,
	duration_ns  int8 not null,
	failback     bool not null
);
-- job_efficiency counts failovers per step.
create index failover_events_job_idx on fabriciq.failover_events (job_id, step_id, time);

create table fabriciq.anomalies (
	id          int8 generated always as identity primary key,
	kind        text not null check (kind in ('link_down', 'flapping', 'path_delay', 'lane_outlier',
	                                         'inband_mismatch', 'slow_sender', 'slow_receiver')),
	severity    text not null check (severity in ('info', 'warning', 'critical')),
	start_time  timestamptz not null,
	end_time    timestamptz check (end_time is null or end_time >= start_time),
	node        text,
	nic         text,
	remote_node text,
	remote_nic  text,
	summary     text not null,
	evidence    jsonb not null default '{}'
);
-- `fabriciq anomalies`: the most recent first.
create index anomalies_start_idx on fabriciq.anomalies (start_time);
-- The controller closes the open anomaly of a NIC/path; few rows are open.
create index anomalies_open_idx on fabriciq.anomalies (node, nic) where end_time is null;

-- An anomaly hits every job/step whose lanes crossed the affected NIC or
-- path while it lasted (a down link: many jobs), so attachment is its own
-- table; ranks are the ranks of that step the anomaly touched.
create table fabriciq.anomaly_jobs (
	anomaly_id int8 not null references fabriciq.anomalies (id) on delete cascade,
	job_id     int8 not null,
	step_id    int8 not null,
	ranks      int[] not null default '{}',
	-- job_anomalies / job_efficiency look anomalies up by job.
	primary key (job_id, step_id, anomaly_id)
);
-- Deleting an anomaly cascades here; without this, a scan per anomaly.
create index anomaly_jobs_anomaly_idx on fabriciq.anomaly_jobs (anomaly_id);

create table fabriciq.drain_hints (
	id         int8 generated always as identity primary key,
	node       text not null,
	nic        text,
	action     text not null check (action in ('drain', 'resume')),
	reason     text not null,
	anomaly_id int8 references fabriciq.anomalies (id) on delete set null,
	created_at timestamptz not null,
	applied_at timestamptz
);
-- `fabriciq hints`: the hints not applied yet.
create index drain_hints_pending_idx on fabriciq.drain_hints (node) where applied_at is null;
