DROP INDEX `credit_holds_user_created_idx`;--> statement-breakpoint
DROP INDEX `credit_holds_created_idx`;--> statement-breakpoint
ALTER TABLE `credit_holds` ADD `renewed_at` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- A hold made before its exchange could renew it was last known alive when it was made.
UPDATE `credit_holds` SET `renewed_at` = `created_at`;--> statement-breakpoint
CREATE INDEX `credit_holds_user_renewed_idx` ON `credit_holds` (`user_id`,`renewed_at`);--> statement-breakpoint
CREATE INDEX `credit_holds_renewed_idx` ON `credit_holds` (`renewed_at`);