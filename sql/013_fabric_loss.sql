-- fabriciq schema, version 13: lossy components blamed.
--
-- fabric_loss: many probed paths losing probes (or DOWN) at once, and the
-- one switch or switch-to-switch cable that their round trips crossed
-- when the loss began and the paths without loss do not cross (network
-- tomography, controller/detector_locate.c). A cable that goes down drops
-- what is in flight until the routes move off it, then the paths are
-- healthy again over their new routes: the blame is on the routes at the
-- loss. Its members are the path link_down anomalies it explains; a
-- component that both drops and delays is one incident (the later blame
-- a member of the first).
alter table fabriciq.anomalies drop constraint anomalies_kind_check;
alter table fabriciq.anomalies add constraint anomalies_kind_check
	check (kind in ('link_down', 'flapping', 'path_delay', 'lane_outlier', 'inband_mismatch', 'slow_sender',
	                'slow_receiver', 'collision', 'rdma_config', 'fabric_delay', 'fabric_loss'));
