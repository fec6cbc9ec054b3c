-- Messages written before the tree (0006_message_tree) have no parent. Each context was one
-- straight conversation: a message follows the one before it in (created_at, id) order, the
-- order in which they were shown, and the active branch ends at the newest message.
-- Written apart from the generated 0006 so that migrations of parallel branches can be
-- renumbered around it. The row-value comparison walks messages_context_created_idx.
UPDATE `messages` SET `parent_id` = (
	SELECT `p`.`id` FROM `messages` AS `p`
	WHERE `p`.`context_id` = `messages`.`context_id`
		AND (`p`.`created_at`, `p`.`id`) < (`messages`.`created_at`, `messages`.`id`)
	ORDER BY `p`.`created_at` DESC, `p`.`id` DESC
	LIMIT 1
)
WHERE `parent_id` IS NULL;
--> statement-breakpoint
UPDATE `contexts` SET `leaf_id` = (
	SELECT `m`.`id` FROM `messages` AS `m`
	WHERE `m`.`context_id` = `contexts`.`id`
	ORDER BY `m`.`created_at` DESC, `m`.`id` DESC
	LIMIT 1
)
WHERE `leaf_id` IS NULL;
