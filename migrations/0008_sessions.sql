-- Sign-in as people expect it: the service's own sessions (a row per signed-in device, its
-- refresh tokens kept only as hashes, each replaced at every refresh), the nonces of wallet
-- sign-ins (Sign-In with Ethereum), and the sign-in methods linked to each account. Only
-- identities whose account is not their own derived id sit in identities_exceptions_idx:
-- every process reads that index whole (see src/platform/auth/identity-links.ts).
CREATE TABLE `identities` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text,
	`issuer` text NOT NULL,
	`subject` text NOT NULL,
	`own_id` integer NOT NULL,
	`label` text,
	`created_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `identities_identity_idx` ON `identities` (`issuer`,`subject`);--> statement-breakpoint
CREATE INDEX `identities_user_idx` ON `identities` (`user_id`);--> statement-breakpoint
CREATE INDEX `identities_exceptions_idx` ON `identities` (`issuer`,`subject`,`user_id`) WHERE own_id = 0;--> statement-breakpoint
CREATE TABLE `refresh_tokens` (
	`hash` text PRIMARY KEY NOT NULL,
	`session_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`rotated_at` integer,
	FOREIGN KEY (`session_id`) REFERENCES `sessions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `refresh_tokens_session_idx` ON `refresh_tokens` (`session_id`);--> statement-breakpoint
CREATE INDEX `refresh_tokens_rotated_idx` ON `refresh_tokens` (`rotated_at`);--> statement-breakpoint
CREATE TABLE `sessions` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`method` text NOT NULL,
	`identity_id` text,
	`device` text NOT NULL,
	`created_at` integer NOT NULL,
	`last_used_at` integer NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`identity_id`) REFERENCES `identities`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `sessions_user_idx` ON `sessions` (`user_id`,`last_used_at`);--> statement-breakpoint
CREATE INDEX `sessions_last_used_idx` ON `sessions` (`last_used_at`);--> statement-breakpoint
CREATE TABLE `wallet_nonces` (
	`nonce` text PRIMARY KEY NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer
);
--> statement-breakpoint
CREATE INDEX `wallet_nonces_expires_idx` ON `wallet_nonces` (`expires_at`);