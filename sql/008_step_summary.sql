-- fabriciq schema, version 8: which nodes have ended a step, and a step's
-- summary for its owner.
--
-- At a step's end the SPANK plugin on the submitting side (srun) prints one
-- line into the job's stderr when fabriciq saw incidents or lane failovers
-- for the step (spank_fabriciq(8): end_report). It asks the controller's
-- API for the step's summary (/api/v1/jobs/JOB.STEP/summary, served to the
-- job's owner), and waits until every node of the step has ended it: a
-- node's StepEnd travels in its agent's ordered stream after everything
-- the step's ranks on that node reported, so once all have arrived the
-- counts are complete. steps.end_time alone cannot say that (the first
-- StepEnd sets it).
create table fabriciq.step_node_ends (
	job_id   int8 not null,
	step_id  int8 not null,
	node     text not null,
	end_time timestamptz not null,
	primary key (job_id, step_id, node),
	foreign key (job_id, step_id) references fabriciq.steps on delete cascade
);
comment on table fabriciq.step_node_ends is
	'One row per node that reported a step''s end (its agent''s StepEnd); a replayed StepEnd changes nothing.';

-- A step's outcome in numbers: who owns it, how many of its nodes have
-- ended it, and the incidents (job_incidents: an incident with its members
-- counts once) and lane outages (lane_outages: both ends' reports of one
-- outage count once) that hit it.
create function fabriciq.step_summary(p_job int8, p_step int8)
returns table (job_id int8, step_id int8, uid int8, mode text, node_count int, nodes_ended int,
               end_time timestamptz, exit_status int, incidents int, anomalies int, failovers int)
language sql stable as $$
	select s.job_id, s.step_id, j.uid, s.mode, s.node_count,
	       (select count(*) from fabriciq.step_node_ends e
	        where e.job_id = s.job_id and e.step_id = s.step_id)::int,
	       s.end_time, s.exit_status,
	       (select count(distinct coalesce(a.incident_id, a.id))
	        from fabriciq.anomaly_jobs aj join fabriciq.anomalies a on a.id = aj.anomaly_id
	        where aj.job_id = s.job_id and aj.step_id = s.step_id)::int,
	       (select count(*) from fabriciq.anomaly_jobs aj
	        where aj.job_id = s.job_id and aj.step_id = s.step_id)::int,
	       (select count(*) from fabriciq.lane_outages o
	        where o.job_id = s.job_id and o.step_id = s.step_id)::int
	from fabriciq.steps s join fabriciq.jobs j on j.job_id = s.job_id
	where s.job_id = p_job and s.step_id = p_step
$$;
comment on function fabriciq.step_summary(int8, int8) is
	'A job step''s owner, its nodes that have ended it (of node_count), and the incidents, anomalies and '
	'lane outages (failovers) that hit it: what the job-end line says.';
