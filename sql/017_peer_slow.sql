-- fabriciq schema, version 17: anomalies from the NCCL profiler plugin.
--
-- peer_slow: one rank's network transfers to one peer (the profiler's
-- step_send windows: NCCL's own transports, timed from post to
-- completion) far slower than the step's other ranks' to theirs, interval
-- after interval (controller/detector_prof.c: rate over busy time below
-- the step's median / controller.peer_slow_factor, 4, in
-- controller.peer_slow_persist, 3, intervals in a row, among at least 3
-- channels that each moved controller.peer_slow_min_bytes, 1 MiB, in
-- transfers of 64 KiB or more on average). node is the rank's node,
-- remote_node the peer's (null when the peer sent no report); no NIC:
-- NCCL names none. Its evidence: job_id, step_id, rank, peer, comm, the
-- channel's bytes, transfers, mean_transfer_ns and gbs, the step's
-- step_median_gbs over its channels, intervals in a row, factor, and qps
-- (the rank's IB queue pairs that interval, slowest first: device, qp,
-- bytes, gbs). Attached to the step and the two ranks.
alter table fabriciq.anomalies drop constraint anomalies_kind_check;
alter table fabriciq.anomalies add constraint anomalies_kind_check
	check (kind in ('link_down', 'flapping', 'path_delay', 'lane_outlier', 'inband_mismatch', 'slow_sender',
	                'slow_receiver', 'collision', 'rdma_config', 'fabric_delay', 'fabric_loss',
	                'topology_mismatch', 'peer_slow'));
comment on column fabriciq.anomalies.kind is
	'link_down, flapping, path_delay, lane_outlier, inband_mismatch, slow_sender, slow_receiver, collision, rdma_config, fabric_delay, fabric_loss, topology_mismatch, peer_slow (sql/017: a rank''s transfers to a peer far slower than the step''s others, from the NCCL profiler plugin).';
