-- Search entries are indexed in bulk, off the chat path. Indexing each message in the
-- transaction that stores it wrote a new FTS5 segment per commit, a tenth of a message's
-- CPU. A new entry now waits in search_pending; a search first indexes the searcher's
-- waiting entries (in the same batch, so it always finds everything stored), and a
-- background job indexes everyone's (see src/services/search.ts). The delete and update
-- triggers touch the FTS index only for an entry it holds: an external-content FTS5 table
-- must never be told to delete a row it was not given.
CREATE TABLE `search_pending` (
	`id` integer PRIMARY KEY NOT NULL
);
--> statement-breakpoint
DROP TRIGGER IF EXISTS `search_docs_after_insert`;
--> statement-breakpoint
CREATE TRIGGER `search_docs_after_insert` AFTER INSERT ON `search_docs`
BEGIN
	INSERT INTO `search_pending` (`id`) VALUES (new.`id`);
END;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `search_docs_after_delete`;
--> statement-breakpoint
CREATE TRIGGER `search_docs_after_delete` AFTER DELETE ON `search_docs`
BEGIN
	INSERT INTO `search_fts` (`search_fts`, `rowid`, `owner_key`, `body`)
	SELECT 'delete', old.`id`, old.`owner_key`, old.`body`
	WHERE NOT EXISTS (SELECT 1 FROM `search_pending` WHERE `id` = old.`id`);
	DELETE FROM `search_pending` WHERE `id` = old.`id`;
END;
--> statement-breakpoint
DROP TRIGGER IF EXISTS `search_docs_after_update`;
--> statement-breakpoint
CREATE TRIGGER `search_docs_after_update` AFTER UPDATE ON `search_docs`
WHEN NOT EXISTS (SELECT 1 FROM `search_pending` WHERE `id` = old.`id`)
BEGIN
	INSERT INTO `search_fts` (`search_fts`, `rowid`, `owner_key`, `body`) VALUES ('delete', old.`id`, old.`owner_key`, old.`body`);
	INSERT INTO `search_fts` (`rowid`, `owner_key`, `body`) VALUES (new.`id`, new.`owner_key`, new.`body`);
END;
