-- fabriciq schema, version 9: each probe window's 90th percentile one-way
-- delay, both directions.
--
-- A report window holds a few dozen probes of a path (one per 20 ms), so
-- its p99 is its slowest one or two: one probe the sending host was slow to
-- hand to its NIC. The controller's delay rule (path_delay) judges the p90,
-- what a tenth of the probes met; these columns are what it judged. NULL in
-- windows from agents that do not send it (the rule then judges the p99).
alter table fabriciq.probe_windows
	add column owd_fwd_p90_ns int8,
	add column owd_rev_p90_ns int8;
comment on column fabriciq.probe_windows.owd_fwd_p90_ns is
	'90th percentile one-way delay src -> dst over the window (ns); what the path_delay rule judges.';
comment on column fabriciq.probe_windows.owd_rev_p90_ns is
	'90th percentile one-way delay dst -> src over the window (ns).';
