-- Each waiting search entry names its owner, so that a search indexes its owner's waiting
-- entries through an index instead of walking everyone's: on Workers the list holds all
-- that was written since the daily job.
ALTER TABLE `search_pending` ADD `user_id` text;--> statement-breakpoint
UPDATE `search_pending` SET `user_id` = (SELECT `user_id` FROM `search_docs` WHERE `search_docs`.`id` = `search_pending`.`id`);--> statement-breakpoint
CREATE INDEX `search_pending_user_idx` ON `search_pending` (`user_id`);--> statement-breakpoint
DROP TRIGGER IF EXISTS `search_docs_after_insert`;--> statement-breakpoint
CREATE TRIGGER `search_docs_after_insert` AFTER INSERT ON `search_docs`
BEGIN
	INSERT INTO `search_pending` (`id`, `user_id`) VALUES (new.`id`, new.`user_id`);
END;
