-- Rebuilds the search index of 0001_search with the owner as ONE token. Matching the user id
-- as a multi-word phrase (the tokenizer splits it at _ and -) cost 20 ms per search at
-- 100,000 messages; a single token is a plain posting-list intersection.
-- owner_key = 'u' || lower(hex(user_id)) || '0': letters and digits only, so one token; the
-- trailing digit keeps the porter stemmer off it. src/services/search.ts computes the same.
-- It is a real column of search_docs, so that an FTS5 'rebuild' indexes the same tokens.
-- Keep BEGIN and END on lines of their own: wrangler's D1 splitter needs the whitespace.
DROP TRIGGER IF EXISTS `search_docs_after_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `search_docs_after_delete`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `search_docs_after_update`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `messages_search_after_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `messages_search_after_update`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `messages_search_after_delete`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `contexts_search_after_insert`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `contexts_search_after_update`;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `contexts_search_after_delete`;
--> statement-breakpoint
DROP TABLE IF EXISTS `search_fts`;
--> statement-breakpoint
DROP TABLE IF EXISTS `search_docs`;
--> statement-breakpoint
CREATE TABLE `search_docs` (
	`id` integer PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`owner_key` text NOT NULL,
	`context_id` text NOT NULL,
	`message_id` text,
	`body` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `search_docs_message_idx` ON `search_docs` (`message_id`);
--> statement-breakpoint
CREATE INDEX `search_docs_context_idx` ON `search_docs` (`context_id`);
--> statement-breakpoint
CREATE VIRTUAL TABLE `search_fts` USING fts5(
	`owner_key`,
	`body`,
	content = 'search_docs',
	content_rowid = 'id',
	tokenize = 'porter unicode61 remove_diacritics 2'
);
--> statement-breakpoint
CREATE TRIGGER `search_docs_after_insert` AFTER INSERT ON `search_docs`
BEGIN
	INSERT INTO `search_fts` (`rowid`, `owner_key`, `body`) VALUES (new.`id`, new.`owner_key`, new.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `search_docs_after_delete` AFTER DELETE ON `search_docs`
BEGIN
	INSERT INTO `search_fts` (`search_fts`, `rowid`, `owner_key`, `body`) VALUES ('delete', old.`id`, old.`owner_key`, old.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `search_docs_after_update` AFTER UPDATE ON `search_docs`
BEGIN
	INSERT INTO `search_fts` (`search_fts`, `rowid`, `owner_key`, `body`) VALUES ('delete', old.`id`, old.`owner_key`, old.`body`);
	INSERT INTO `search_fts` (`rowid`, `owner_key`, `body`) VALUES (new.`id`, new.`owner_key`, new.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `messages_search_after_insert` AFTER INSERT ON `messages`
BEGIN
	INSERT INTO `search_docs` (`user_id`, `owner_key`, `context_id`, `message_id`, `body`, `created_at`)
	VALUES (new.`user_id`, 'u' || lower(hex(new.`user_id`)) || '0', new.`context_id`, new.`id`, new.`content`, new.`created_at`);
END;
--> statement-breakpoint
CREATE TRIGGER `messages_search_after_update` AFTER UPDATE OF `id`, `user_id`, `context_id`, `content`, `created_at` ON `messages`
BEGIN
	UPDATE `search_docs`
	SET `message_id` = new.`id`, `user_id` = new.`user_id`, `owner_key` = 'u' || lower(hex(new.`user_id`)) || '0',
		`context_id` = new.`context_id`, `body` = new.`content`, `created_at` = new.`created_at`
	WHERE `message_id` = old.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `messages_search_after_delete` AFTER DELETE ON `messages`
BEGIN
	DELETE FROM `search_docs` WHERE `message_id` = old.`id`;
END;
--> statement-breakpoint
CREATE TRIGGER `contexts_search_after_insert` AFTER INSERT ON `contexts`
BEGIN
	INSERT INTO `search_docs` (`user_id`, `owner_key`, `context_id`, `message_id`, `body`, `created_at`)
	VALUES (new.`user_id`, 'u' || lower(hex(new.`user_id`)) || '0', new.`id`, NULL, new.`name`, new.`created_at`);
END;
--> statement-breakpoint
CREATE TRIGGER `contexts_search_after_update` AFTER UPDATE OF `id`, `user_id`, `name` ON `contexts`
BEGIN
	UPDATE `search_docs`
	SET `context_id` = new.`id`, `user_id` = new.`user_id`, `owner_key` = 'u' || lower(hex(new.`user_id`)) || '0', `body` = new.`name`
	WHERE `context_id` = old.`id` AND `message_id` IS NULL;
END;
--> statement-breakpoint
CREATE TRIGGER `contexts_search_after_delete` AFTER DELETE ON `contexts`
BEGIN
	DELETE FROM `search_docs` WHERE `context_id` = old.`id`;
END;
--> statement-breakpoint
INSERT INTO `search_docs` (`user_id`, `owner_key`, `context_id`, `message_id`, `body`, `created_at`)
SELECT `user_id`, 'u' || lower(hex(`user_id`)) || '0', `id`, NULL, `name`, `created_at` FROM `contexts`;
--> statement-breakpoint
INSERT INTO `search_docs` (`user_id`, `owner_key`, `context_id`, `message_id`, `body`, `created_at`)
SELECT `user_id`, 'u' || lower(hex(`user_id`)) || '0', `context_id`, `id`, `content`, `created_at` FROM `messages`;
