-- Fewer B-trees written by every message (BENCHMARKS.md): holds lose their index by time
-- alone, a context's group and import source are indexed only where set, and a model
-- timing's key is the rowid (the old text ids are not kept: nothing refers to them).
DROP INDEX `credit_holds_renewed_idx`;--> statement-breakpoint
DROP INDEX `contexts_group_idx`;--> statement-breakpoint
DROP INDEX `contexts_user_imported_idx`;--> statement-breakpoint
CREATE INDEX `contexts_group_idx` ON `contexts` (`group_id`) WHERE group_id is not null;--> statement-breakpoint
CREATE INDEX `contexts_user_imported_idx` ON `contexts` (`user_id`,`imported_from`) WHERE imported_from is not null;--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_model_timings` (
	`id` integer PRIMARY KEY NOT NULL,
	`model` text NOT NULL,
	`at` integer NOT NULL,
	`first_token_ms` integer,
	`duration_ms` integer NOT NULL,
	`output_tokens` integer NOT NULL
);
--> statement-breakpoint
INSERT INTO `__new_model_timings`("model", "at", "first_token_ms", "duration_ms", "output_tokens") SELECT "model", "at", "first_token_ms", "duration_ms", "output_tokens" FROM `model_timings` ORDER BY "at";--> statement-breakpoint
DROP TABLE `model_timings`;--> statement-breakpoint
ALTER TABLE `__new_model_timings` RENAME TO `model_timings`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `model_timings_model_at_idx` ON `model_timings` (`model`,`at`);