-- Full-text search over message text and context names (src/services/search.ts).
-- search_docs holds one row per searchable text under a stable INTEGER PRIMARY KEY (implicit
-- rowids may change on VACUUM); search_fts is an external-content FTS5 index over it. Triggers
-- keep both in step with messages and contexts, so writers (chat, contexts) need not know.
-- user_id is indexed too: every query matches the caller's id as a phrase, so a search only
-- walks that user's postings, and then checks user_id exactly.
-- Keep BEGIN and END on lines of their own: wrangler's D1 splitter needs the whitespace.
CREATE TABLE `search_docs` (
	`id` integer PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
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
	`user_id`,
	`body`,
	content = 'search_docs',
	content_rowid = 'id',
	tokenize = 'porter unicode61 remove_diacritics 2'
);
--> statement-breakpoint
CREATE TRIGGER `search_docs_after_insert` AFTER INSERT ON `search_docs`
BEGIN
	INSERT INTO `search_fts` (`rowid`, `user_id`, `body`) VALUES (new.`id`, new.`user_id`, new.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `search_docs_after_delete` AFTER DELETE ON `search_docs`
BEGIN
	INSERT INTO `search_fts` (`search_fts`, `rowid`, `user_id`, `body`) VALUES ('delete', old.`id`, old.`user_id`, old.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `search_docs_after_update` AFTER UPDATE ON `search_docs`
BEGIN
	INSERT INTO `search_fts` (`search_fts`, `rowid`, `user_id`, `body`) VALUES ('delete', old.`id`, old.`user_id`, old.`body`);
	INSERT INTO `search_fts` (`rowid`, `user_id`, `body`) VALUES (new.`id`, new.`user_id`, new.`body`);
END;
--> statement-breakpoint
CREATE TRIGGER `messages_search_after_insert` AFTER INSERT ON `messages`
BEGIN
	INSERT INTO `search_docs` (`user_id`, `context_id`, `message_id`, `body`, `created_at`)
	VALUES (new.`user_id`, new.`context_id`, new.`id`, new.`content`, new.`created_at`);
END;
--> statement-breakpoint
CREATE TRIGGER `messages_search_after_update` AFTER UPDATE OF `id`, `user_id`, `context_id`, `content`, `created_at` ON `messages`
BEGIN
	UPDATE `search_docs`
	SET `message_id` = new.`id`, `user_id` = new.`user_id`, `context_id` = new.`context_id`,
		`body` = new.`content`, `created_at` = new.`created_at`
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
	INSERT INTO `search_docs` (`user_id`, `context_id`, `message_id`, `body`, `created_at`)
	VALUES (new.`user_id`, new.`id`, NULL, new.`name`, new.`created_at`);
END;
--> statement-breakpoint
CREATE TRIGGER `contexts_search_after_update` AFTER UPDATE OF `id`, `user_id`, `name` ON `contexts`
BEGIN
	UPDATE `search_docs` SET `context_id` = new.`id`, `user_id` = new.`user_id`, `body` = new.`name`
	WHERE `context_id` = old.`id` AND `message_id` IS NULL;
END;
--> statement-breakpoint
CREATE TRIGGER `contexts_search_after_delete` AFTER DELETE ON `contexts`
BEGIN
	DELETE FROM `search_docs` WHERE `context_id` = old.`id`;
END;
--> statement-breakpoint
INSERT INTO `search_docs` (`user_id`, `context_id`, `message_id`, `body`, `created_at`)
SELECT `user_id`, `id`, NULL, `name`, `created_at` FROM `contexts`;
--> statement-breakpoint
INSERT INTO `search_docs` (`user_id`, `context_id`, `message_id`, `body`, `created_at`)
SELECT `user_id`, `context_id`, `id`, `content`, `created_at` FROM `messages`;
