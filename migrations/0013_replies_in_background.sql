CREATE TABLE `running_replies` (
	`id` text PRIMARY KEY NOT NULL,
	`context_id` text NOT NULL,
	`user_id` text NOT NULL,
	`parent_id` text NOT NULL,
	`model` text NOT NULL,
	`hold_id` text NOT NULL,
	`text` text DEFAULT '' NOT NULL,
	`stop_requested` integer DEFAULT false NOT NULL,
	`started_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`context_id`) REFERENCES `contexts`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `running_replies_context_idx` ON `running_replies` (`context_id`);--> statement-breakpoint
CREATE INDEX `running_replies_hold_idx` ON `running_replies` (`hold_id`);--> statement-breakpoint
ALTER TABLE `messages` ADD `status` text DEFAULT 'done' NOT NULL;--> statement-breakpoint
ALTER TABLE `messages` ADD `rating` integer;