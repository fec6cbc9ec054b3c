-- One index of the messages by context, messages_context_parent_idx (its first column): the one
-- by (context, time) was two pages more in every message's commit (BENCHMARKS.md). The index by
-- person takes the context second, so that a statement naming both (a context's delete, export
-- or attachments) reads that context's messages, not all of the person's.
DROP INDEX `messages_context_created_idx`;--> statement-breakpoint
DROP INDEX `messages_user_idx`;--> statement-breakpoint
CREATE INDEX `messages_user_idx` ON `messages` (`user_id`,`context_id`);