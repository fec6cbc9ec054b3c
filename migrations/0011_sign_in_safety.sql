CREATE TABLE `ended_sessions` (
	`session_id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`reason` text NOT NULL,
	`ended_at` integer NOT NULL,
	`tokens_expire_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `ended_sessions_expiry_idx` ON `ended_sessions` (`tokens_expire_at`);--> statement-breakpoint
CREATE TABLE `invites` (
	`id` text PRIMARY KEY NOT NULL,
	`code_hash` text NOT NULL,
	`uses_left` integer NOT NULL,
	`expires_at` integer,
	`plan_id` text,
	`note` text,
	`created_by` text,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `invites_code_hash_idx` ON `invites` (`code_hash`);--> statement-breakpoint
CREATE TABLE `sign_up_counts` (
	`client` text NOT NULL,
	`window_start` integer NOT NULL,
	`count` integer NOT NULL,
	PRIMARY KEY(`client`, `window_start`)
);
--> statement-breakpoint
DROP INDEX `identities_exceptions_idx`;--> statement-breakpoint
CREATE INDEX `identities_exceptions_idx` ON `identities` (`issuer`,`subject`,`user_id`) WHERE own_id = 0 or user_id is null;--> statement-breakpoint
ALTER TABLE `sessions` ADD `access_expires_at` integer;