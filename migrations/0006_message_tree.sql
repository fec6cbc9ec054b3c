ALTER TABLE `contexts` ADD `name_source` text DEFAULT 'person' NOT NULL;--> statement-breakpoint
ALTER TABLE `contexts` ADD `leaf_id` text;--> statement-breakpoint
ALTER TABLE `contexts` ADD `instructions` text;--> statement-breakpoint
ALTER TABLE `contexts` ADD `pinned` integer DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE `contexts` ADD `archived` integer DEFAULT false NOT NULL;--> statement-breakpoint
CREATE INDEX `contexts_user_flags_idx` ON `contexts` (`user_id`,`archived`,`pinned`,`updated_at`,`id`);--> statement-breakpoint
ALTER TABLE `messages` ADD `parent_id` text;--> statement-breakpoint
CREATE INDEX `messages_context_parent_idx` ON `messages` (`context_id`,`parent_id`,`created_at`,`id`);--> statement-breakpoint
ALTER TABLE `usage_events` ADD `message_id` text;--> statement-breakpoint
ALTER TABLE `users` ADD `presets` text DEFAULT '[]' NOT NULL;