/** What the model answers in the measured conversation: prose, code, a table and math. */
export const RICH_REPLIES = [
  [
    "How often should I water a monstera?",
    "Water it when the top **5 cm** of soil are dry: about weekly in summer, every two weeks in winter.\n\n" +
      "| Season | Water every | Light |\n|---|---|---|\n| Spring | 7 days | bright, indirect |\n| Summer | 5–7 days | bright, indirect |\n| Autumn | 10 days | bright |\n| Winter | 14 days | as much as it gets |\n\n" +
      "Check with a finger, or a moisture meter if you have one.",
  ],
  [
    "Write me a script that reminds me.",
    "Here is a small Python script:\n\n```python\nimport datetime as dt\n\nPLANTS = {\"monstera\": 7, \"fern\": 3, \"cactus\": 21}\n\ndef due(last: dt.date, every: int, today: dt.date) -> bool:\n    \"\"\"True when the plant is due for water.\"\"\"\n    return (today - last).days >= every\n\nfor name, every in PLANTS.items():\n    if due(dt.date(2025, 5, 1), every, dt.date.today()):\n        print(f\"Water the {name} today\")\n```\n\n" +
      // biome-ignore lint/suspicious/noTemplateCurlyInString: JavaScript the reply shows, not a template of this file.
      "And the same check in JavaScript, for a browser:\n\n```js\nconst plants = { monstera: 7, fern: 3, cactus: 21 };\nconst days = (a, b) => Math.floor((b - a) / 86_400_000);\nfor (const [name, every] of Object.entries(plants)) {\n  if (days(new Date(\"2025-05-01\"), new Date()) >= every) console.log(`Water the ${name} today`);\n}\n```",
  ],
  [
    "How much water does the pot hold?",
    "A pot is close to a truncated cone. With radii $r_1$ and $r_2$ and height $h$ its volume is\n\n" +
      "$$V = \\frac{\\pi h}{3}\\left(r_1^2 + r_1 r_2 + r_2^2\\right)$$\n\n" +
      "and over a month of waterings $w_i$ the plant drinks\n\n$$W = \\sum_{i=1}^{n} w_i \\approx n \\cdot \\bar{w}$$\n\n" +
      "For $r_1 = 10$, $r_2 = 7$ and $h = 20$ (cm), $V \\approx 4.6$ litres; water about a fifth of that each time.",
  ],
];
