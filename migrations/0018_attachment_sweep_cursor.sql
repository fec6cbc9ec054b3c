CREATE TABLE `job_cursors` (
	`name` text PRIMARY KEY NOT NULL,
	`position` text NOT NULL
);
