// Token counts where a provider gives none: an estimate of about 3 characters a token,
// which errs high for English (about 4) so that a prompt trimmed to a window by it fits.

/** The estimated tokens of a text. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 3);
}

/** What a message costs in a prompt: its text and the few tokens of its role and framing. */
export const MESSAGE_OVERHEAD_TOKENS = 4;

/** The estimated tokens of one message of a prompt. */
export function messageTokens(text: string): number {
  return estimateTokens(text) + MESSAGE_OVERHEAD_TOKENS;
}
