import { useEffect, useState } from "preact/hooks";

/**
 * A person's picture, or their initial where there is none or it does not load: the pages
 * load pictures only from the avatar hosts the server allows (AVATAR_HOSTS, in the CSP), so
 * a picture elsewhere fails, and the initial shows instead of a broken image.
 */
export function Avatar(props: { url: string | null | undefined; name: string; alt?: string; large?: boolean }) {
  const [failed, setFailed] = useState<string | null>(null);
  useEffect(() => setFailed(null), [props.url]);
  const size = props.large ? 56 : 28;
  if (props.url && failed !== props.url) {
    return (
      <img
        class={`avatar${props.large ? " large" : ""}`}
        src={props.url}
        alt={props.alt ?? ""}
        width={size}
        height={size}
        referrerpolicy="no-referrer"
        onError={() => setFailed(props.url!)}
      />
    );
  }
  return (
    <span class={`avatar initials${props.large ? " large" : ""}`} aria-hidden="true">
      {props.name.slice(0, 1).toUpperCase() || "?"}
    </span>
  );
}
