CREATE TABLE `health_probe` (
	`id` integer PRIMARY KEY NOT NULL,
	`pad` blob NOT NULL
);
