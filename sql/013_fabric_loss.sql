-- fabriciq schema, version 13: lossy components blamed, and differences
-- from the expected topology stored.
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
--
-- topology_mismatch: a difference between the fabric the path traces show
-- and the site's expected topology (controller.topology_file): a host on
-- another switch than declared, a link or switch not declared, a declared
-- host no route reaches, an address on two switches. No node, NIC or
-- component: its summary says what; it closes when the routes no longer
-- show it. A declared link no route crosses is not one (ECMP may hash no
-- probe over it): `fabriciq topology` lists those.
alter table fabriciq.anomalies drop constraint anomalies_kind_check;
alter table fabriciq.anomalies add constraint anomalies_kind_check
	check (kind in ('link_down', 'flapping', 'path_delay', 'lane_outlier', 'inband_mismatch', 'slow_sender',
	                'slow_receiver', 'collision', 'rdma_config', 'fabric_delay', 'fabric_loss',
	                'topology_mismatch'));
