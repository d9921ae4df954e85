-- fabriciq schema, version 18: QoS between jobs (issue 20).
--
-- steps.net_class: the step's network class as SPANK chose it
-- (spank_fabriciq(8): --fabriciq=MODE,class=NAME, the job's Slurm QOS, or
-- the site's default_class; StepStart.net_class), null: none (its lanes
-- unmarked). lane_windows.pacing_rate: the sending end's rate cap at the
-- interval's end (bytes/s, SO_MAX_PACING_RATE; null: none or a receiving
-- end); lane_windows.throttled_ns: how long in the interval a cap was in
-- force. The job report sums them per step (`fabriciq job`: qos).
alter table fabriciq.steps add column net_class text;
alter table fabriciq.lane_windows add column pacing_rate int8, add column throttled_ns int8;
