ALTER TABLE `contexts` ADD `imported_from` text;--> statement-breakpoint
CREATE INDEX `contexts_user_imported_idx` ON `contexts` (`user_id`,`imported_from`);