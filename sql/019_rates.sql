-- fabriciq schema, version 19: rates between network classes (issue 20).
--
-- lane_windows.assigned_rate: the sending rate the controller gave the
-- lane at the interval's end (bytes/s; null: none, or a receiving end):
-- its path shared a congested link with a higher network class's lanes
-- (controller/rates.h; proto Advice kind "rate"); the plugin paced the
-- lane at most at it, so pacing_rate is at most it then.
-- lane_windows.assigned_ns: how long in the interval the lane had one.
-- The job report sums them per step (`fabriciq job`: qos).
alter table fabriciq.lane_windows add column assigned_rate int8, add column assigned_ns int8;
