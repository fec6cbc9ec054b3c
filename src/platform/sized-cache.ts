/**
 * A map that keeps its most recently used entries up to a total size (what each entry
 * weighs is the caller's measure: characters, bytes). quick-lru, which the rest of the
 * service uses, bounds the number of entries only, and an entry here can weigh a thousand
 * times another; lru-cache 11, which bounds the size, would add 5.8 KiB (minified,
 * gzipped) to the Worker's bundle for these twenty lines.
 */
export class SizedCache<K, V> {
  private readonly entries = new Map<K, { value: V; size: number }>();
  private total = 0;

  /** `maxSize`: the total kept; an entry over `maxEntrySize` is not kept. */
  constructor(
    private readonly maxSize: number,
    private readonly maxEntrySize = maxSize,
  ) {}

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    // Map keeps insertion order: the entry moves to the newest end.
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  set(key: K, value: V, size: number): void {
    this.delete(key);
    if (size > this.maxEntrySize) return;
    this.entries.set(key, { value, size });
    this.total += size;
    for (const [oldest, entry] of this.entries) {
      if (this.total <= this.maxSize) break;
      this.entries.delete(oldest);
      this.total -= entry.size;
    }
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.total -= entry.size;
  }

  /** The total size kept (not the number of entries, as a Map's `size` is). */
  get totalSize(): number {
    return this.total;
  }
}
