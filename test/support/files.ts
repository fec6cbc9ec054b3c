// Real files for attachment tests, made here rather than kept as binaries: a PNG, a JPEG's
// first bytes, PDFs with and without a text layer, an SVG.

/** A valid 1×1 PNG (a green pixel), padded with an ancillary chunk to `size` bytes when asked. */
export function png(size = 0): Uint8Array<ArrayBuffer> {
  const pixel = Uint8Array.from(atob("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="), (c) => c.charCodeAt(0));
  if (size <= pixel.length) return pixel;
  // A private chunk ("prVt") before IEND: decoders skip it; its CRC is not checked by sniffers.
  const pad = size - pixel.length - 12;
  const out = new Uint8Array(size);
  const iend = pixel.length - 12;
  out.set(pixel.subarray(0, iend));
  const view = new DataView(out.buffer);
  view.setUint32(iend, pad);
  out.set([0x70, 0x72, 0x56, 0x74], iend + 4);
  out.set(pixel.subarray(iend), iend + 12 + pad);
  return out;
}

/** The first bytes of a JPEG (SOI, JFIF APP0). */
export function jpeg(): Uint8Array<ArrayBuffer> {
  return new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00, ...new Array(200).fill(0), 0xff, 0xd9]);
}

export function svg(): Uint8Array<ArrayBuffer> {
  return new Uint8Array(new TextEncoder().encode('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'));
}

/** A PDF whose pages say `pages[i]` (Helvetica; empty strings make pages without text). */
export function pdf(pages: string[]): Uint8Array<ArrayBuffer> {
  const objects: string[] = [];
  const add = (body: string) => objects.push(body) + 2; // ids 1 and 2 are the catalog and the page tree
  const font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>");
  const kids: number[] = [];
  for (const text of pages) {
    const content = text ? `BT /F1 12 Tf 72 720 Td (${text.replace(/[()\\]/g, "\\$&")}) Tj ET` : "";
    const stream = add(`<< /Length ${content.length} >>\nstream\n${content}\nendstream`);
    kids.push(add(`<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${stream} 0 R >>`));
  }
  const all = ["<< /Type /Catalog /Pages 2 0 R >>", `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(" ")}] /Count ${kids.length} >>`, ...objects];
  let out = "%PDF-1.4\n";
  const offsets: number[] = [];
  all.forEach((body, i) => {
    offsets.push(out.length);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = out.length;
  out += `xref\n0 ${all.length + 1}\n0000000000 65535 f \n${offsets.map((o) => `${String(o).padStart(10, "0")} 00000 n \n`).join("")}`;
  out += `trailer\n<< /Size ${all.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return new Uint8Array(new TextEncoder().encode(out));
}

/** A multipart body with one file. */
export function fileForm(bytes: Uint8Array<ArrayBuffer>, name: string, type = "application/octet-stream"): FormData {
  const body = new FormData();
  body.set("file", new Blob([bytes], { type }), name);
  return body;
}
