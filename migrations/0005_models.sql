CREATE TABLE `model_timings` (
	`id` text PRIMARY KEY NOT NULL,
	`model` text NOT NULL,
	`at` integer NOT NULL,
	`first_token_ms` integer,
	`duration_ms` integer NOT NULL,
	`output_tokens` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `model_timings_model_at_idx` ON `model_timings` (`model`,`at`);