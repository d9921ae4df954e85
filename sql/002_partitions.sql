-- fabriciq schema, version 2: daily partitions and retention for the
-- time-series tables listed in fabriciq.timeseries_tables.
--
-- Days are UTC days whatever the session's TimeZone. The controller calls
-- maintain_partitions() once an hour (and `fabriciq-db maintain` does the
-- same from cron); migrate calls it too, so a fresh database takes rows at once.

-- A row whose day has no partition lands here instead of being refused.
create table fabriciq.probe_windows_default partition of fabriciq.probe_windows default;
create table fabriciq.lane_windows_default partition of fabriciq.lane_windows default;
create table fabriciq.clock_estimates_default partition of fabriciq.clock_estimates default;
create table fabriciq.link_events_default partition of fabriciq.link_events default;

-- Upper bound of a partition, read from its bound expression
-- ("FOR VALUES FROM ('...') TO ('...')"); NULL for the default partition.
create function fabriciq.partition_upper_bound(part regclass) returns timestamptz
language sql stable as $$
	select (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'TO \(''([^'']+)''\)'))[1]::timestamptz
	from pg_class c where c.oid = part
$$;

-- Creates the partition of table `tbl` for UTC day `day` if it is missing.
-- Rows already stored in the default partition for that day are moved into
-- it (ATTACH would otherwise fail: the default partition's implicit
-- constraint would be violated). The default partition is locked first so
-- no writer adds such a row between the move and the attach.
-- Returns true if it created the partition.
create function fabriciq.create_partition(tbl text, day date) returns bool
language plpgsql as $$
declare
	col  text;
	part text := format('%s_p%s', tbl, to_char(day, 'YYYYMMDD'));
	lo   timestamptz := day::timestamp at time zone 'UTC';
	hi   timestamptz := (day + 1)::timestamp at time zone 'UTC';
begin
	select time_column into col from fabriciq.timeseries_tables where name = tbl;
	if col is null then
		raise exception 'fabriciq.create_partition: % is not a time-series table', tbl;
	end if;
	if to_regclass(format('fabriciq.%I', part)) is not null then
		return false;
	end if;
	execute format('lock table fabriciq.%I in access exclusive mode', tbl || '_default');
	execute format('create table fabriciq.%I (like fabriciq.%I including defaults including constraints)',
	               part, tbl);
	execute format('with moved as (delete from fabriciq.%I where %I >= $1 and %I < $2 returning *) '
	               'insert into fabriciq.%I select * from moved',
	               tbl || '_default', col, col, part) using lo, hi;
	execute format('alter table fabriciq.%I attach partition fabriciq.%I for values from (%L) to (%L)',
	               tbl, part, lo, hi);
	return true;
end
$$;

-- Creates the partitions of every time-series table for `days` UTC days
-- from `first_day`; returns how many it created.
create function fabriciq.create_partitions(first_day date, days int) returns int
language plpgsql as $$
declare
	t record;
	n int := 0;
begin
	for t in select name from fabriciq.timeseries_tables order by name loop
		for i in 0 .. days - 1 loop
			if fabriciq.create_partition(t.name, first_day + i) then
				n := n + 1;
			end if;
		end loop;
	end loop;
	return n;
end
$$;

-- Drops every partition whose whole range is older than its table's
-- retention at time `as_of`, and deletes such rows from the default partitions.
-- Returns how many partitions it dropped.
create function fabriciq.drop_expired_partitions(as_of timestamptz) returns int
language plpgsql as $$
declare
	t record;
	p record;
	n int := 0;
begin
	for t in select name, time_column, retention from fabriciq.timeseries_tables order by name loop
		for p in select c.oid::regclass as part, c.relname
		         from pg_inherits i join pg_class c on c.oid = i.inhrelid
		         where i.inhparent = format('fabriciq.%I', t.name)::regclass
		           and fabriciq.partition_upper_bound(c.oid) <= as_of - t.retention loop
			execute format('drop table fabriciq.%I', p.relname);
			n := n + 1;
		end loop;
		execute format('delete from fabriciq.%I where %I < $1', t.name || '_default', t.time_column)
			using as_of - t.retention;
	end loop;
	return n;
end
$$;

-- The periodic job: partitions for today and the next partition_premake_days
-- days (UTC), expired partitions dropped. Returns {created, dropped}.
create function fabriciq.maintain_partitions(out created int, out dropped int)
language plpgsql as $$
declare
	ahead int := (select value::int from fabriciq.settings where name = 'partition_premake_days');
begin
	created := fabriciq.create_partitions((now() at time zone 'UTC')::date, ahead + 1);
	dropped := fabriciq.drop_expired_partitions(now());
end
$$;

-- Every partition of the time-series tables, for `fabriciq-db status`.
create view fabriciq.partitions as
select t.name as table_name,
       c.relname as partition_name,
       (regexp_match(pg_get_expr(c.relpartbound, c.oid), 'FROM \(''([^'']+)''\)'))[1]::timestamptz as range_start,
       fabriciq.partition_upper_bound(c.oid) as range_end,
       c.reltuples::int8 as estimated_rows
from fabriciq.timeseries_tables t
join pg_inherits i on i.inhparent = format('fabriciq.%I', t.name)::regclass
join pg_class c on c.oid = i.inhrelid;
comment on view fabriciq.partitions is
	'Partitions of the time-series tables: range (NULL for the default partition) and the planner''s row estimate (-1: never analysed).';
