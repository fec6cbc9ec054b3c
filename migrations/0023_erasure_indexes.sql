CREATE INDEX `messages_user_idx` ON `messages` (`user_id`);--> statement-breakpoint
CREATE INDEX `sessions_identity_idx` ON `sessions` (`identity_id`);