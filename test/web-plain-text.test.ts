import { describe, expect, it } from "vitest";
import { plainText } from "../web/src/ui/plain-text";

// What the navigator, the search results and the titles show for a name or a snippet.
describe("Markdown read as plain text", () => {
  it.each([
    ["# Title of the plan", "Title of the plan"],
    ["### Watering **schedule** for _ferns_", "Watering schedule for ferns"],
    ["**bold** and `code`", "bold and code"],
    ["…when to **repot** a *monstera*: in spring…", "…when to repot a monstera: in spring…"],
    ["see [the guide](https://example.com/guide) and ![a fern](https://x.example/f.png)", "see the guide and a fern"],
    ["> quoted\n> - listed item", "quoted listed item"],
    ["```python\nprint('hi')\n```", "print('hi')"],
    ["~~old~~ new \\*literal\\*", "old new *literal*"],
    ["| Plant | Water | |---|:---:| | Fern | **weekly** |", "Plant · Water · Fern · weekly"],
    ["…ter | | Monstera | weekly | | Cactus | monthly…", "…ter · Monstera · weekly · Cactus · monthly…"],
  ])("%j reads %j", (markdown, text) => {
    expect(plainText(markdown)).toBe(text);
  });

  it.each([
    "snake_case_name and __dunder",
    "C# tips: 2 * 3 = 6",
    "costs $5 or $10 #1",
    "a_b * c_d",
  ])("leaves text that only looks like Markdown alone: %j", (text) => {
    expect(plainText(text)).toBe(text);
  });

  it("keeps a fragment cut in the middle of its marks readable", () => {
    expect(plainText("and `npm inst")).toBe("and npm inst");
    expect(plainText("the [link text](https://exa")).toBe("the link text");
  });
});
