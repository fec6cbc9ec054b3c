CREATE TABLE `credit_holds` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`day` text NOT NULL,
	`credits` integer NOT NULL,
	`created_at` integer NOT NULL,
	`claim_key` text,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `credit_holds_user_created_idx` ON `credit_holds` (`user_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `credit_holds_created_idx` ON `credit_holds` (`created_at`);