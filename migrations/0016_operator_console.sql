CREATE TABLE `audit_events` (
	`id` text PRIMARY KEY NOT NULL,
	`at` integer NOT NULL,
	`actor_id` text NOT NULL,
	`action` text NOT NULL,
	`target_id` text,
	`details` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `audit_events_at_idx` ON `audit_events` (`at`,`id`);--> statement-breakpoint
CREATE INDEX `audit_events_target_idx` ON `audit_events` (`target_id`,`at`);--> statement-breakpoint
PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_usage_events` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text,
	`at` integer NOT NULL,
	`model` text NOT NULL,
	`context_id` text,
	`message_id` text,
	`credits` integer NOT NULL,
	`kind` text DEFAULT 'message' NOT NULL,
	`input_tokens` integer,
	`output_tokens` integer,
	`tokens_estimated` integer,
	`key_id` text,
	`first_token_ms` integer,
	`outcome` text DEFAULT 'ok' NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
INSERT INTO `__new_usage_events`("id", "user_id", "at", "model", "context_id", "message_id", "credits", "kind", "input_tokens", "output_tokens", "tokens_estimated") SELECT "id", "user_id", "at", "model", "context_id", "message_id", "credits", "kind", "input_tokens", "output_tokens", "tokens_estimated" FROM `usage_events`;--> statement-breakpoint
DROP TABLE `usage_events`;--> statement-breakpoint
ALTER TABLE `__new_usage_events` RENAME TO `usage_events`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
CREATE INDEX `usage_events_user_at_idx` ON `usage_events` (`user_id`,`at`,`id`);--> statement-breakpoint
CREATE INDEX `usage_events_at_idx` ON `usage_events` (`at`);--> statement-breakpoint
CREATE INDEX `usage_events_key_at_idx` ON `usage_events` (`key_id`,`at`) WHERE key_id is not null;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `daily_credit_limit` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `expires_at` integer;--> statement-breakpoint
ALTER TABLE `api_keys` ADD `models` text;--> statement-breakpoint
ALTER TABLE `credit_holds` ADD `key_id` text;--> statement-breakpoint
ALTER TABLE `users` ADD `email_verified` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `suspended_at` integer;--> statement-breakpoint
ALTER TABLE `users` ADD `suspended_reason` text;--> statement-breakpoint
ALTER TABLE `users` ADD `plan_id` text;--> statement-breakpoint
ALTER TABLE `users` ADD `granted_credits` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `invite_id` text;--> statement-breakpoint
CREATE INDEX `users_suspended_idx` ON `users` (`id`) WHERE suspended_at is not null;--> statement-breakpoint
CREATE INDEX `users_created_idx` ON `users` (`created_at`,`id`);