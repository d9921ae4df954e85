-- fabriciq schema, version 11: anomalies blamed on a fabric component.
--
-- fabric_delay: many probed paths delayed at once, and the one component
-- of the fabric (a switch, a switch-to-switch link, a host link or a NIC,
-- as the paths' routes show them: sql/010_path_routes.sql) that the
-- delayed paths share and the healthy ones do not cross (network
-- tomography, controller/detector_locate.c). It is the incident of the
-- path_delay anomalies it explains (their incident_id), and is attached to
-- the jobs whose lanes' NIC pairs are routed through the component.
alter table fabriciq.anomalies drop constraint anomalies_kind_check;
alter table fabriciq.anomalies add constraint anomalies_kind_check
	check (kind in ('link_down', 'flapping', 'path_delay', 'lane_outlier', 'inband_mismatch', 'slow_sender',
	                'slow_receiver', 'collision', 'rdma_config', 'fabric_delay'));
alter table fabriciq.anomalies add column component text;
comment on column fabriciq.anomalies.component is
	'The fabric component blamed (a switch "spine3", a link "leaf1~spine3", a host link "n3/rail1~leaf2", a NIC "n3/rail1"); null: the anomaly is of its node/NIC/path.';

create or replace view fabriciq.incidents as
select a.id, a.kind, a.severity, a.node, a.nic, a.remote_node, a.remote_nic, a.events,
       a.start_time as first_at, coalesce(a.last_event, a.start_time) as last_at, a.end_time,
       coalesce(a.end_time, now()) - a.start_time as duration,
       array(select m.kind from fabriciq.anomalies m where m.incident_id = a.id order by m.start_time, m.id)
           as member_kinds,
       a.summary, a.component
from fabriciq.anomalies a
where a.incident_id is null;
