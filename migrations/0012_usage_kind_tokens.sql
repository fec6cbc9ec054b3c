ALTER TABLE `usage_events` ADD `kind` text DEFAULT 'message' NOT NULL;--> statement-breakpoint
ALTER TABLE `usage_events` ADD `input_tokens` integer;--> statement-breakpoint
ALTER TABLE `usage_events` ADD `output_tokens` integer;--> statement-breakpoint
ALTER TABLE `usage_events` ADD `tokens_estimated` integer;