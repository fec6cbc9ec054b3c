-- The usage rollups GET /admin/usage reads (schema/usage-rollups.ts), WITHOUT ROWID: a
-- report reads them in key order, and without a rowid the key is the table. Then they are
-- filled from the usage rows kept so far (the last 90 days), as the chat path adds to them
-- (src/features/account/usage-rollups.ts): a time to first token's bucket is how many of the
-- edges in src/features/account/first-token-histogram.ts it reaches; by person, its log2 is
-- taken at its bucket's middle (2750 + 500 × bucket thousandths: SQLite here has no log2),
-- where the chat path adds its exact log2; an erased account's usage (no user) goes to the
-- erased accounts' days. bench/usage.ts runs these INSERTs too, over the usage rows it seeds.
CREATE TABLE `usage_days` (
	`day` text NOT NULL,
	`model` text NOT NULL,
	`messages` integer DEFAULT 0 NOT NULL,
	`credits` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`estimated_rows` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`first_tokens0` integer DEFAULT 0 NOT NULL,
	`first_tokens1` integer DEFAULT 0 NOT NULL,
	`first_tokens2` integer DEFAULT 0 NOT NULL,
	`first_tokens3` integer DEFAULT 0 NOT NULL,
	`first_tokens4` integer DEFAULT 0 NOT NULL,
	`first_tokens5` integer DEFAULT 0 NOT NULL,
	`first_tokens6` integer DEFAULT 0 NOT NULL,
	`first_tokens7` integer DEFAULT 0 NOT NULL,
	`first_tokens8` integer DEFAULT 0 NOT NULL,
	`first_tokens9` integer DEFAULT 0 NOT NULL,
	`first_tokens10` integer DEFAULT 0 NOT NULL,
	`first_tokens11` integer DEFAULT 0 NOT NULL,
	`first_tokens12` integer DEFAULT 0 NOT NULL,
	`first_tokens13` integer DEFAULT 0 NOT NULL,
	`first_tokens14` integer DEFAULT 0 NOT NULL,
	`first_tokens15` integer DEFAULT 0 NOT NULL,
	`first_tokens16` integer DEFAULT 0 NOT NULL,
	`first_tokens17` integer DEFAULT 0 NOT NULL,
	`first_tokens18` integer DEFAULT 0 NOT NULL,
	`first_tokens19` integer DEFAULT 0 NOT NULL,
	`first_tokens20` integer DEFAULT 0 NOT NULL,
	`first_tokens21` integer DEFAULT 0 NOT NULL,
	`first_tokens22` integer DEFAULT 0 NOT NULL,
	`first_tokens23` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`day`, `model`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `usage_erased_days` (
	`day` text NOT NULL,
	`model` text NOT NULL,
	`messages` integer DEFAULT 0 NOT NULL,
	`credits` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`estimated_rows` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`first_tokens` integer DEFAULT 0 NOT NULL,
	`first_token_log2_sum` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`day`, `model`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `usage_user_cumulative` (
	`user_id` text NOT NULL,
	`model` text NOT NULL,
	`day` text NOT NULL,
	`messages` integer DEFAULT 0 NOT NULL,
	`credits` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`estimated_rows` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`first_tokens` integer DEFAULT 0 NOT NULL,
	`first_token_log2_sum` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`user_id`, `model`, `day`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `usage_user_totals` (
	`user_id` text NOT NULL,
	`model` text NOT NULL,
	`first_day` text NOT NULL,
	`last_day` text NOT NULL,
	`messages` integer DEFAULT 0 NOT NULL,
	`credits` integer DEFAULT 0 NOT NULL,
	`input_tokens` integer DEFAULT 0 NOT NULL,
	`output_tokens` integer DEFAULT 0 NOT NULL,
	`estimated_rows` integer DEFAULT 0 NOT NULL,
	`failed` integer DEFAULT 0 NOT NULL,
	`first_tokens` integer DEFAULT 0 NOT NULL,
	`first_token_log2_sum` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`user_id`, `model`)
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `usage_days` (`day`, `model`, `messages`, `credits`, `input_tokens`, `output_tokens`, `estimated_rows`, `failed`, `first_tokens0`, `first_tokens1`, `first_tokens2`, `first_tokens3`, `first_tokens4`, `first_tokens5`, `first_tokens6`, `first_tokens7`, `first_tokens8`, `first_tokens9`, `first_tokens10`, `first_tokens11`, `first_tokens12`, `first_tokens13`, `first_tokens14`, `first_tokens15`, `first_tokens16`, `first_tokens17`, `first_tokens18`, `first_tokens19`, `first_tokens20`, `first_tokens21`, `first_tokens22`, `first_tokens23`)
SELECT `day`, `model`, sum(`kind` = 'message' AND `outcome` = 'ok'), sum(`credits`), coalesce(sum(`input_tokens`), 0), coalesce(sum(`output_tokens`), 0), sum(coalesce(`tokens_estimated`, 0)), sum(`outcome` = 'failed'), sum(`bucket` = 0), sum(`bucket` = 1), sum(`bucket` = 2), sum(`bucket` = 3), sum(`bucket` = 4), sum(`bucket` = 5), sum(`bucket` = 6), sum(`bucket` = 7), sum(`bucket` = 8), sum(`bucket` = 9), sum(`bucket` = 10), sum(`bucket` = 11), sum(`bucket` = 12), sum(`bucket` = 13), sum(`bucket` = 14), sum(`bucket` = 15), sum(`bucket` = 16), sum(`bucket` = 17), sum(`bucket` = 18), sum(`bucket` = 19), sum(`bucket` = 20), sum(`bucket` = 21), sum(`bucket` = 22), sum(`bucket` = 23)
FROM (SELECT *, strftime('%Y-%m-%d', `at` / 1000, 'unixepoch') AS `day`, coalesce(`user_id`, '') AS `person`, CASE WHEN `first_token_ms` IS NULL THEN -1 ELSE (`first_token_ms` >= 8) + (`first_token_ms` >= 11.314) + (`first_token_ms` >= 16) + (`first_token_ms` >= 22.627) + (`first_token_ms` >= 32) + (`first_token_ms` >= 45.255) + (`first_token_ms` >= 64) + (`first_token_ms` >= 90.51) + (`first_token_ms` >= 128) + (`first_token_ms` >= 181.019) + (`first_token_ms` >= 256) + (`first_token_ms` >= 362.039) + (`first_token_ms` >= 512) + (`first_token_ms` >= 724.077) + (`first_token_ms` >= 1024) + (`first_token_ms` >= 1448.155) + (`first_token_ms` >= 2048) + (`first_token_ms` >= 2896.309) + (`first_token_ms` >= 4096) + (`first_token_ms` >= 5792.619) + (`first_token_ms` >= 8192) + (`first_token_ms` >= 11585.238) + (`first_token_ms` >= 16384) END AS `bucket` FROM `usage_events`)
GROUP BY `day`, `model`;
--> statement-breakpoint
INSERT INTO `usage_user_totals` (`user_id`, `model`, `first_day`, `last_day`, `messages`, `credits`, `input_tokens`, `output_tokens`, `estimated_rows`, `failed`, `first_tokens`, `first_token_log2_sum`)
SELECT `person`, `model`, min(`day`), max(`day`), sum(`messages`), sum(`credits`), sum(`input_tokens`), sum(`output_tokens`), sum(`estimated_rows`), sum(`failed`), sum(`first_tokens`), sum(`first_token_log2_sum`)
FROM (SELECT `person`, `model`, `day`, sum(`kind` = 'message' AND `outcome` = 'ok') AS `messages`, sum(`credits`) AS `credits`, coalesce(sum(`input_tokens`), 0) AS `input_tokens`, coalesce(sum(`output_tokens`), 0) AS `output_tokens`, sum(coalesce(`tokens_estimated`, 0)) AS `estimated_rows`, sum(`outcome` = 'failed') AS `failed`, sum(`bucket` >= 0) AS `first_tokens`, sum(CASE WHEN `bucket` >= 0 THEN 2750 + 500 * `bucket` ELSE 0 END) AS `first_token_log2_sum` FROM (SELECT *, strftime('%Y-%m-%d', `at` / 1000, 'unixepoch') AS `day`, coalesce(`user_id`, '') AS `person`, CASE WHEN `first_token_ms` IS NULL THEN -1 ELSE (`first_token_ms` >= 8) + (`first_token_ms` >= 11.314) + (`first_token_ms` >= 16) + (`first_token_ms` >= 22.627) + (`first_token_ms` >= 32) + (`first_token_ms` >= 45.255) + (`first_token_ms` >= 64) + (`first_token_ms` >= 90.51) + (`first_token_ms` >= 128) + (`first_token_ms` >= 181.019) + (`first_token_ms` >= 256) + (`first_token_ms` >= 362.039) + (`first_token_ms` >= 512) + (`first_token_ms` >= 724.077) + (`first_token_ms` >= 1024) + (`first_token_ms` >= 1448.155) + (`first_token_ms` >= 2048) + (`first_token_ms` >= 2896.309) + (`first_token_ms` >= 4096) + (`first_token_ms` >= 5792.619) + (`first_token_ms` >= 8192) + (`first_token_ms` >= 11585.238) + (`first_token_ms` >= 16384) END AS `bucket` FROM `usage_events`) GROUP BY `person`, `model`, `day`)
WHERE `person` <> ''
GROUP BY `person`, `model`;
--> statement-breakpoint
INSERT INTO `usage_user_cumulative` (`user_id`, `model`, `day`, `messages`, `credits`, `input_tokens`, `output_tokens`, `estimated_rows`, `failed`, `first_tokens`, `first_token_log2_sum`)
SELECT `person`, `model`, `day`, sum(`messages`) OVER (PARTITION BY `person`, `model` ORDER BY `day`), sum(`credits`) OVER (PARTITION BY `person`, `model` ORDER BY `day`), sum(`input_tokens`) OVER (PARTITION BY `person`, `model` ORDER BY `day`), sum(`output_tokens`) OVER (PARTITION BY `person`, `model` ORDER BY `day`), sum(`estimated_rows`) OVER (PARTITION BY `person`, `model` ORDER BY `day`), sum(`failed`) OVER (PARTITION BY `person`, `model` ORDER BY `day`), sum(`first_tokens`) OVER (PARTITION BY `person`, `model` ORDER BY `day`), sum(`first_token_log2_sum`) OVER (PARTITION BY `person`, `model` ORDER BY `day`)
FROM (SELECT `person`, `model`, `day`, sum(`kind` = 'message' AND `outcome` = 'ok') AS `messages`, sum(`credits`) AS `credits`, coalesce(sum(`input_tokens`), 0) AS `input_tokens`, coalesce(sum(`output_tokens`), 0) AS `output_tokens`, sum(coalesce(`tokens_estimated`, 0)) AS `estimated_rows`, sum(`outcome` = 'failed') AS `failed`, sum(`bucket` >= 0) AS `first_tokens`, sum(CASE WHEN `bucket` >= 0 THEN 2750 + 500 * `bucket` ELSE 0 END) AS `first_token_log2_sum` FROM (SELECT *, strftime('%Y-%m-%d', `at` / 1000, 'unixepoch') AS `day`, coalesce(`user_id`, '') AS `person`, CASE WHEN `first_token_ms` IS NULL THEN -1 ELSE (`first_token_ms` >= 8) + (`first_token_ms` >= 11.314) + (`first_token_ms` >= 16) + (`first_token_ms` >= 22.627) + (`first_token_ms` >= 32) + (`first_token_ms` >= 45.255) + (`first_token_ms` >= 64) + (`first_token_ms` >= 90.51) + (`first_token_ms` >= 128) + (`first_token_ms` >= 181.019) + (`first_token_ms` >= 256) + (`first_token_ms` >= 362.039) + (`first_token_ms` >= 512) + (`first_token_ms` >= 724.077) + (`first_token_ms` >= 1024) + (`first_token_ms` >= 1448.155) + (`first_token_ms` >= 2048) + (`first_token_ms` >= 2896.309) + (`first_token_ms` >= 4096) + (`first_token_ms` >= 5792.619) + (`first_token_ms` >= 8192) + (`first_token_ms` >= 11585.238) + (`first_token_ms` >= 16384) END AS `bucket` FROM `usage_events`) GROUP BY `person`, `model`, `day`)
WHERE `person` <> '';
--> statement-breakpoint
INSERT INTO `usage_erased_days` (`day`, `model`, `messages`, `credits`, `input_tokens`, `output_tokens`, `estimated_rows`, `failed`, `first_tokens`, `first_token_log2_sum`)
SELECT `day`, `model`, sum(`messages`), sum(`credits`), sum(`input_tokens`), sum(`output_tokens`), sum(`estimated_rows`), sum(`failed`), sum(`first_tokens`), sum(`first_token_log2_sum`)
FROM (SELECT `person`, `model`, `day`, sum(`kind` = 'message' AND `outcome` = 'ok') AS `messages`, sum(`credits`) AS `credits`, coalesce(sum(`input_tokens`), 0) AS `input_tokens`, coalesce(sum(`output_tokens`), 0) AS `output_tokens`, sum(coalesce(`tokens_estimated`, 0)) AS `estimated_rows`, sum(`outcome` = 'failed') AS `failed`, sum(`bucket` >= 0) AS `first_tokens`, sum(CASE WHEN `bucket` >= 0 THEN 2750 + 500 * `bucket` ELSE 0 END) AS `first_token_log2_sum` FROM (SELECT *, strftime('%Y-%m-%d', `at` / 1000, 'unixepoch') AS `day`, coalesce(`user_id`, '') AS `person`, CASE WHEN `first_token_ms` IS NULL THEN -1 ELSE (`first_token_ms` >= 8) + (`first_token_ms` >= 11.314) + (`first_token_ms` >= 16) + (`first_token_ms` >= 22.627) + (`first_token_ms` >= 32) + (`first_token_ms` >= 45.255) + (`first_token_ms` >= 64) + (`first_token_ms` >= 90.51) + (`first_token_ms` >= 128) + (`first_token_ms` >= 181.019) + (`first_token_ms` >= 256) + (`first_token_ms` >= 362.039) + (`first_token_ms` >= 512) + (`first_token_ms` >= 724.077) + (`first_token_ms` >= 1024) + (`first_token_ms` >= 1448.155) + (`first_token_ms` >= 2048) + (`first_token_ms` >= 2896.309) + (`first_token_ms` >= 4096) + (`first_token_ms` >= 5792.619) + (`first_token_ms` >= 8192) + (`first_token_ms` >= 11585.238) + (`first_token_ms` >= 16384) END AS `bucket` FROM `usage_events`) GROUP BY `person`, `model`, `day`)
WHERE `person` = ''
GROUP BY `day`, `model`;

--> statement-breakpoint
-- The rated replies with what the report counts of them, by time and by person (schema/contexts.ts): its thumbs up and down.
CREATE INDEX `messages_rated_idx` ON `messages` (`created_at`,`rating`,`status`,`model`) WHERE rating is not null;--> statement-breakpoint
CREATE INDEX `messages_rated_user_idx` ON `messages` (`user_id`,`created_at`,`rating`,`status`) WHERE rating is not null;