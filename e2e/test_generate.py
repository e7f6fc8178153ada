"""The generate page on wasm and WebGPU: a greedy continuation is the one
``pyburn.models.generate`` makes on the desktop's cpu backend from the same weights, tokenizer
and prompt, token for token (and it is the Zen of Python's next line); the tokens reach the
page one at a time, the first while the rest are still being made; a seeded top-p run is the
desktop's too."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

import pyburn
from pyburn import models, store
from pyburn.models.generate import generate

DEVICES = ("wasm", "wgpu")
WEIGHTS, TOKENIZER = "data/zen-llama.safetensors", "data/zen-tokenizer.json"
PROMPT = "Beautiful is"
MAX_NEW = 40
#: the poem's next line and the start of the one after
EXPECTED = " better than ugly.\nExplicit is better"
FINISHED = "() => ['done', 'failed'].includes(window.generateDemo.state)"
#: a token has reached the page while the generation goes on
STREAMING = ("() => window.generateDemo.tokens.length > 0 && "
             "window.generateDemo.state === 'generating'")
#: one generation's bound, on a slow machine
GENERATION_MS = 60_000


@dataclass
class Desktop:
    """The site's model and tokenizer, built by the zoo on the desktop's cpu backend."""

    model: pyburn.nn.Module
    tokenizer: models.Tokenizer

    def continuation(self, prompt: str, **options: object) -> list[int]:
        ids = self.tokenizer.encode(prompt)
        out = generate(self.model, pyburn.tensor(ids, device="cpu"), MAX_NEW, **options)
        return out.tolist()[len(ids):]


@pytest.fixture(scope="module")
def desktop(site_dir: Path) -> Desktop:
    about = store.load_metadata(site_dir / WEIGHTS)
    model = models.create(about["model"], site_dir / WEIGHTS, device="cpu", **about["config"])
    return Desktop(model, models.Tokenizer.from_file(site_dir / TOKENIZER))


@dataclass
class GeneratePage:
    """The page, opened with its device switch on `device`."""

    page: object
    device: str

    def run(self, prompt: str, strategy: str = "greedy", seed: int = 0) -> dict:
        """Generate `MAX_NEW` tokens after `prompt`; the page's state afterwards."""
        self.page.fill("#prompt", prompt)
        self.page.fill("#max-new", str(MAX_NEW))
        self.page.select_option("#strategy", strategy)
        if strategy != "greedy":  # greedy takes no seed: the page hides it
            self.page.fill("#seed", str(seed))
        self.page.click("#generate")
        self.page.wait_for_function(STREAMING, timeout=GENERATION_MS)
        self.page.wait_for_function(FINISHED, timeout=GENERATION_MS)
        demo = self.page.evaluate("() => window.generateDemo")
        assert demo["state"] == "done", self.page.inner_text("#status")
        return demo


@pytest.fixture(scope="module", params=DEVICES)
def generate_page(request: pytest.FixtureRequest, module_web: object) -> GeneratePage:
    return GeneratePage(module_web.open(f"generate.html?device={request.param}"), request.param)


def test_greedy_is_the_desktops_token_for_token(generate_page: GeneratePage, desktop: Desktop,
                                                screenshot: object) -> None:
    demo = generate_page.run(PROMPT)
    result = demo["result"]
    expected = desktop.continuation(PROMPT)
    assert result["device"] == generate_page.device
    assert result["prompt_ids"] == desktop.tokenizer.encode(PROMPT)
    assert result["ids"] == expected
    # streamed: every token reached the page as an event of its own, in order
    assert demo["tokens"] == expected
    text = desktop.tokenizer.decode(expected)
    assert text.startswith(EXPECTED)
    assert generate_page.page.inner_text("#output") == PROMPT + text
    assert "tokens/s" in generate_page.page.inner_text("#speed")
    screenshot(generate_page.page, f"generate-{generate_page.device}")


def test_seeded_sampling_is_the_desktops(generate_page: GeneratePage, desktop: Desktop) -> None:
    demo = generate_page.run("Now is", strategy="top-p", seed=7)
    expected = desktop.continuation("Now is", strategy="top-p", temperature=0.8, top_p=0.9,
                                    generator=pyburn.Generator(7))
    assert demo["result"]["ids"] == expected
