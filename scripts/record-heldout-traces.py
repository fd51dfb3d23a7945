#!/usr/bin/env python3
"""Records allocation traces of training loops of several model families with PyTorch.

Usage: python3 scripts/record-heldout-traces.py OUTDIR [--deadline SECONDS] [--only NAME,...]

Each workload builds a model from a configuration with random weights (no network, no checkpoint:
the allocation pattern does not depend on weight values), trains it for a few iterations with
AdamW and bf16 autocast (the detection model in float32), and records every allocation request PyTorch's caching allocator sees with
torch.cuda.memory._record_memory_history. The history is converted to the project's text trace
format (trace/trace.go):

    # workload NAME torch VERSION events N iterations K
    a ID SIZE STREAM     allocation of SIZE requested bytes
    f ID                 free of allocation ID ("free_completed" in the history)
    i N                  training iteration N begins

An iteration starts where the loop allocates and frees a sentinel of DefaultMarkerSize bytes (the
same convention bench/snapshot.go reads in raw snapshots); the sentinel itself is not written.
Recording starts before the model is built, so weights and optimizer state are in the trace.

Besides OUTDIR/NAME.trace.gz, writes OUTDIR/steps.jsonl: per workload the median step time over
iterations 3 and later (allocation history on, default allocator, measured with a device
synchronize after each step), each step's time, and PyTorch's own peak allocated / peak reserved
bytes over the run (torch.cuda.max_memory_allocated / max_memory_reserved).
"""

import argparse
import gc
import gzip
import json
import os
import random
import statistics
import sys
import time
import traceback

ITER_MARKER = 123457  # bench.DefaultMarkerSize
START_MARKER = 123459  # first allocation of each workload's recording


def marker(nbytes):
    import torch

    t = torch.empty(nbytes, dtype=torch.uint8, device="cuda")
    del t


def adamw(params):
    import torch

    return torch.optim.AdamW([p for p in params if p.requires_grad], lr=1e-4)


def training(m):
    """A workload's state: model m in training mode and AdamW over its trainable parameters."""
    m.train()
    return m, adamw(m.parameters())


def bf16_step(model, opt, loss_fn):
    import torch

    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = loss_fn()
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=True)


def masked_lm_step(m, opt, b, n, vocab_from, vocab_to, mask_id):
    """One masked-LM step: b sequences of n random tokens, 15% of them masked and predicted."""
    import torch

    x = torch.randint(vocab_from, vocab_to, (b, n), device="cuda")
    labels = torch.full_like(x, -100)
    pick = torch.rand(b, n, device="cuda") < 0.15
    labels[pick] = x[pick]
    x = x.masked_fill(pick, mask_id)
    bf16_step(m, opt, lambda: m(input_ids=x, labels=labels).loss)


# ---- workloads: each returns (description, build, step) where build() -> state and step(state, i, rng)


def t5_encdec():
    """T5-base shape, full fine-tuning; source and target lengths drawn independently per step."""
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    def build():
        cfg = T5Config(vocab_size=32128, d_model=768, d_kv=64, d_ff=3072, num_layers=12,
                       num_decoder_layers=12, num_heads=12, decoder_start_token_id=0, pad_token_id=0)
        with torch.device("cuda"):
            m = T5ForConditionalGeneration(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, src, tgt = 8, rng.randint(64, 512), rng.randint(16, 256)
        x = torch.randint(1, 32128, (b, src), device="cuda")
        y = torch.randint(1, 32128, (b, tgt), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=x, labels=y).loss)

    return "T5-base encoder-decoder (223M), full FT, batch 8, source 64-512 and target 16-256 tokens drawn independently", build, step


def mixtral_moe():
    """Small Mixtral: 8 experts, top-2 routing, full fine-tuning, lengths 128-1024."""
    import torch
    from transformers import MixtralConfig, MixtralForCausalLM

    def build():
        cfg = MixtralConfig(vocab_size=32000, hidden_size=768, intermediate_size=2048, num_hidden_layers=6,
                            num_attention_heads=12, num_key_value_heads=4, num_local_experts=8,
                            num_experts_per_tok=2, max_position_embeddings=4096, output_router_logits=True)
        with torch.device("cuda"):
            m = MixtralForCausalLM(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, n = 8, rng.randint(128, 1024)
        x = torch.randint(0, 32000, (b, n), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=x, labels=x).loss)

    return "Mixtral-style mixture of experts (8 experts, top-2, 6 layers, hidden 768), full FT, batch 8, lengths 128-1024", build, step


def timm_fixed(arch, desc):
    """A timm image classifier trained at 224x224, batch 64: every iteration is the same shape."""
    import torch

    def build():
        import timm

        m = timm.create_model(arch, pretrained=False, num_classes=1000).cuda()
        return training(m)

    def step(state, i, rng):
        m, opt = state
        x = torch.randn(64, 3, 224, 224, device="cuda")
        y = torch.randint(0, 1000, (64,), device="cuda")
        bf16_step(m, opt, lambda: torch.nn.functional.cross_entropy(m(x), y))

    return desc, build, step


def vit_fixed():
    """timm ViT-B/16 at 224x224, fixed shape: every iteration is the same."""
    return timm_fixed("vit_base_patch16_224", "timm ViT-B/16 (86M), full FT, batch 64, 224x224 (fixed shape)")


def resnet_multiscale():
    """torchvision ResNet-50 trained at five image sizes, one drawn per step."""
    import torch
    import torchvision

    sizes = [160, 192, 224, 256, 288]

    def build():
        m = torchvision.models.resnet50(weights=None).cuda()
        return training(m)

    def step(state, i, rng):
        m, opt = state
        s = rng.choice(sizes)
        x = torch.randn(64, 3, s, s, device="cuda")
        y = torch.randint(0, 1000, (64,), device="cuda")
        bf16_step(m, opt, lambda: torch.nn.functional.cross_entropy(m(x), y))

    return "torchvision ResNet-50 (25.6M), full FT, batch 64, image side drawn from 160/192/224/256/288", build, step


def bert_mlm():
    """BERT-base masked LM, 15% of tokens masked, lengths 64-512."""
    import torch
    from transformers import BertConfig, BertForMaskedLM

    def build():
        with torch.device("cuda"):
            m = BertForMaskedLM(BertConfig())
        return training(m)

    def step(state, i, rng):
        m, opt = state
        masked_lm_step(m, opt, 32, rng.randint(64, 512), 1000, 30522, 103)

    return "BERT-base masked LM (110M), full FT, batch 32, lengths 64-512, 15% masked", build, step


def qwen_lora():
    """Qwen2-style LM with a 151,936-token vocabulary, LoRA r=16 on the attention projections."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    def build():
        cfg = Qwen2Config(vocab_size=151936, hidden_size=1024, intermediate_size=2816, num_hidden_layers=12,
                          num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=4096,
                          tie_word_embeddings=True)
        with torch.device("cuda"):
            m = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
        m = get_peft_model(m, LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, n = 2, rng.randint(256, 4096)
        x = torch.randint(0, 151936, (b, n), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=x, labels=x).loss)

    return "Qwen2-style LM (vocabulary 151,936, 12 layers, hidden 1024), LoRA r=16 on q/k/v/o, base frozen bf16, batch 2, lengths 256-4096, no recomputation", build, step


def deberta_mlm():
    """DeBERTa-v2-style masked LM (disentangled attention), lengths 64-512."""
    import torch
    from transformers import DebertaV2Config, DebertaV2ForMaskedLM

    def build():
        cfg = DebertaV2Config(vocab_size=128100, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                              intermediate_size=3072, max_position_embeddings=512, relative_attention=True,
                              position_buckets=256, pos_att_type=["p2c", "c2p"], position_biased_input=False)
        with torch.device("cuda"):
            m = DebertaV2ForMaskedLM(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        masked_lm_step(m, opt, 16, rng.randint(64, 512), 1000, 128100, 4)

    return "DeBERTa-v2-style masked LM (disentangled attention, 12 layers, hidden 768, vocabulary 128,100), full FT, batch 16, lengths 64-512, 15% masked", build, step


def timm_multires(arch, sizes, desc):
    """A timm image classifier, channels-last, trained at image sides drawn per step, each with its batch."""
    import timm
    import torch

    def build():
        m = timm.create_model(arch, pretrained=False, num_classes=1000).cuda()
        m = m.to(memory_format=torch.channels_last)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        s = rng.choice(sorted(sizes))
        b = sizes[s]
        x = torch.randn(b, 3, s, s, device="cuda").to(memory_format=torch.channels_last)
        y = torch.randint(0, 1000, (b,), device="cuda")
        bf16_step(m, opt, lambda: torch.nn.functional.cross_entropy(m(x), y))

    return desc, build, step


def convnext_multiscale():
    """timm ConvNeXt-Tiny, channels-last, trained at four image sizes with the batch scaled to keep pixels per step."""
    return timm_multires("convnext_tiny", {160: 96, 192: 64, 224: 48, 256: 36},
                         "timm ConvNeXt-Tiny (28.6M), channels-last, full FT, image side and batch drawn together from "
                         "160/96, 192/64, 224/48, 256/36")


def gpt2_token_budget_ckpt():
    """GPT-2 medium with gradient checkpointing, batches of a fixed token budget: batch and length vary together."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    def build():
        cfg = GPT2Config(n_embd=1024, n_layer=24, n_head=16, n_positions=2048)
        with torch.device("cuda"):
            m = GPT2LMHeadModel(cfg)
        m.gradient_checkpointing_enable()
        m.config.use_cache = False
        return training(m)

    def step(state, i, rng):
        m, opt = state
        n = rng.choice([128, 256, 512, 1024, 2048])
        b = 16384 // n
        x = torch.randint(0, 50257, (b, n), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=x, labels=x).loss)

    return "GPT-2 medium (355M) with gradient checkpointing, full FT, 16,384 tokens a step: length drawn from 128-2048, batch 16,384 / length", build, step


def fasterrcnn_detection():
    """torchvision Faster R-CNN (ResNet-50 FPN), images of varying size and box count, multi-scale resizing."""
    import torch
    import torchvision

    scales = (480, 544, 608, 672, 736, 800)

    def build():
        m = torchvision.models.detection.fasterrcnn_resnet50_fpn(weights=None, weights_backbone=None, num_classes=91,
                                                                   min_size=scales, max_size=1333).cuda()
        return training(m)

    def step(state, i, rng):
        m, opt = state
        images, targets = [], []
        for _ in range(4):
            h, w = rng.randint(360, 800), rng.randint(360, 1066)
            images.append(torch.rand(3, h, w, device="cuda"))
            k = rng.randint(1, 24)
            xy = torch.rand(k, 2, device="cuda") * torch.tensor([w * 0.8, h * 0.8], device="cuda")
            wh = torch.rand(k, 2, device="cuda") * torch.tensor([w * 0.2, h * 0.2], device="cuda") + 4
            targets.append({"boxes": torch.cat([xy, xy + wh], dim=1),
                            "labels": torch.randint(1, 91, (k,), device="cuda")})
        loss = sum(m(images, targets).values())  # float32: the detection heads' ops as torchvision runs them
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return ("torchvision Faster R-CNN ResNet-50 FPN (41M), full FT, float32, batch 4 images of 360-800 x 360-1066 "
            "with 1-24 boxes each, resized to a shorter side drawn from 480-800"), build, step


def vit_multicrop():
    """timm ViT-S/16 trained DINO-style: two global crops and a varying number of local crops per image."""
    import copy

    import timm
    import torch

    def build():
        backbone = timm.create_model("vit_small_patch16_224", pretrained=False, num_classes=0, dynamic_img_size=True)
        head = torch.nn.Sequential(torch.nn.Linear(384, 2048), torch.nn.GELU(), torch.nn.Linear(2048, 256),
                                   torch.nn.Linear(256, 65536, bias=False))
        student = torch.nn.Sequential(backbone, head).cuda()
        teacher = copy.deepcopy(student)
        for p in teacher.parameters():
            p.requires_grad_(False)
        student.train()
        teacher.train()
        return student, teacher, adamw(student.parameters())

    def step(state, i, rng):
        student, teacher, opt = state
        b, nloc = 32, rng.randint(2, 10)
        glob = torch.randn(2 * b, 3, 224, 224, device="cuda")
        loc = torch.randn(nloc * b, 3, 96, 96, device="cuda")

        def loss():
            with torch.no_grad():
                t = (teacher(glob).float() / 0.04).softmax(-1).chunk(2)
            outs = list(student(glob).chunk(2)) + list(student(loc).chunk(nloc))
            total = 0
            for si, so in enumerate(outs):
                lp = torch.nn.functional.log_softmax(so.float() / 0.1, dim=-1)
                for ti, tt in enumerate(t):
                    if ti != si:
                        total = total - (tt * lp).sum(-1).mean()
            return total

        bf16_step(student, opt, loss)
        with torch.no_grad():
            for ps, pt in zip(student.parameters(), teacher.parameters()):
                pt.mul_(0.996).add_(ps, alpha=0.004)

    return ("timm ViT-S/16 (22M) and a DINO head (bottleneck 256, 65,536 outputs), DINO-style self-distillation, full FT, batch 32 images: two 224x224 "
            "global crops and 2-10 local 96x96 crops (drawn per step), EMA teacher"), build, step


def unet_aspect_buckets():
    """Latent-diffusion UNet trained on aspect-ratio buckets of one pixel area: height and width vary per step."""
    import math

    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Res(nn.Module):
        def __init__(self, cin, cout, temb):
            super().__init__()
            self.n1, self.c1 = nn.GroupNorm(32, cin), nn.Conv2d(cin, cout, 3, padding=1)
            self.t = nn.Linear(temb, cout)
            self.n2, self.c2 = nn.GroupNorm(32, cout), nn.Conv2d(cout, cout, 3, padding=1)
            self.skip = nn.Conv2d(cin, cout, 1) if cin != cout else nn.Identity()

        def forward(self, x, t):
            h = self.c1(F.silu(self.n1(x))) + self.t(t)[:, :, None, None]
            return self.c2(F.silu(self.n2(h))) + self.skip(x)

    class Attn(nn.Module):
        def __init__(self, c):
            super().__init__()
            self.n, self.qkv, self.o, self.heads = nn.GroupNorm(32, c), nn.Conv2d(c, 3 * c, 1), nn.Conv2d(c, c, 1), c // 64

        def forward(self, x):
            b, c, hh, ww = x.shape
            q, k, v = self.qkv(self.n(x)).reshape(b, 3, self.heads, c // self.heads, hh * ww).unbind(1)
            a = F.scaled_dot_product_attention(q.transpose(-1, -2), k.transpose(-1, -2), v.transpose(-1, -2))
            return x + self.o(a.transpose(-1, -2).reshape(b, c, hh, ww))

    class UNet(nn.Module):
        def __init__(self, ch=(128, 256, 512), temb=512):
            super().__init__()
            self.temb = nn.Sequential(nn.Linear(128, temb), nn.SiLU(), nn.Linear(temb, temb))
            self.inp = nn.Conv2d(4, ch[0], 3, padding=1)
            self.down, self.up = nn.ModuleList(), nn.ModuleList()
            c = ch[0]
            for co in ch:
                self.down.append(nn.ModuleList([Res(c, co, temb), Res(co, co, temb)]))
                c = co
            self.mid = nn.ModuleList([Res(c, c, temb), Attn(c), Res(c, c, temb)])
            for co in reversed(ch):
                self.up.append(nn.ModuleList([Res(c + co, co, temb), Res(co, co, temb)]))
                c = co
            self.out = nn.Sequential(nn.GroupNorm(32, c), nn.SiLU(), nn.Conv2d(c, 4, 3, padding=1))

        def forward(self, x, steps):
            f = torch.exp(-math.log(10000) * torch.arange(64, device=x.device) / 64)
            a = steps[:, None].float() * f[None]
            t = self.temb(torch.cat([a.sin(), a.cos()], -1))
            h, skips = self.inp(x), []
            for i, (r1, r2) in enumerate(self.down):
                h = r2(r1(h, t), t)
                skips.append(h)
                if i < len(self.down) - 1:
                    h = F.avg_pool2d(h, 2)
            h = self.mid[2](self.mid[1](self.mid[0](h, t)), t)
            for i, (r1, r2) in enumerate(self.up):
                if i > 0:
                    h = F.interpolate(h, scale_factor=2.0, mode="nearest")
                h = r2(r1(torch.cat([h, skips.pop()], 1), t), t)
            return self.out(h)

    buckets = [(512, 512), (448, 576), (576, 448), (384, 640), (640, 384), (320, 768), (768, 320)]

    def build():
        m = UNet().cuda()
        return training(m)

    def step(state, i, rng):
        m, opt = state
        hgt, wid = rng.choice(buckets)
        b = 16
        x0 = torch.randn(b, 4, hgt // 8, wid // 8, device="cuda")
        noise = torch.randn_like(x0)
        steps = torch.randint(0, 1000, (b,), device="cuda")
        alpha = torch.cos(steps.float() / 1000 * math.pi / 2)[:, None, None, None]
        xt = alpha * x0 + (1 - alpha ** 2).sqrt() * noise
        bf16_step(m, opt, lambda: F.mse_loss(m(xt, steps).float(), noise))

    return ("latent-diffusion UNet (channels 128/256/512, two residual blocks a level, attention at 1/4), full FT, batch 16 latents of "
            "aspect-ratio buckets of 512x512 pixels' area (512x512 to 320x768, drawn per step)"), build, step


def whisper_seq2seq():
    """Whisper-style speech encoder-decoder: 30 s of log-mel features, transcripts of varying length."""
    import torch
    from transformers import WhisperConfig, WhisperForConditionalGeneration

    def build():
        cfg = WhisperConfig(vocab_size=51865, d_model=512, encoder_layers=6, decoder_layers=6,
                            encoder_attention_heads=8, decoder_attention_heads=8, encoder_ffn_dim=2048,
                            decoder_ffn_dim=2048, num_mel_bins=80, max_source_positions=1500,
                            max_target_positions=448)
        with torch.device("cuda"):
            m = WhisperForConditionalGeneration(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, n = 16, rng.randint(16, 448)
        x = torch.randn(b, 80, 3000, device="cuda")
        y = torch.randint(0, 50000, (b, n), device="cuda")
        bf16_step(m, opt, lambda: m(input_features=x, labels=y).loss)

    return ("Whisper-base-style speech encoder-decoder (6+6 layers, d_model 512), full FT, batch 16 of 30 s log-mel "
            "features, transcripts of 16-448 tokens drawn per step"), build, step


def wav2vec2_ctc():
    """wav2vec 2.0 base with a CTC head on raw audio of varying duration."""
    import torch
    from transformers import Wav2Vec2Config, Wav2Vec2ForCTC

    def build():
        # No SpecAugment time masking: transformers 5.17 indexes the GPU activations with a host mask.
        m = Wav2Vec2ForCTC(Wav2Vec2Config(vocab_size=32, mask_time_prob=0.0)).cuda()
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, seconds = 8, rng.uniform(2.0, 12.0)
        n = int(16000 * seconds)
        x = torch.randn(b, n, device="cuda")
        y = torch.randint(1, 32, (b, max(8, n // 1600)), device="cuda")
        bf16_step(m, opt, lambda: m(input_values=x, labels=y).loss)

    return ("wav2vec 2.0 base (95M) with a CTC head, full FT, batch 8 of raw 16 kHz audio, 2-12 s drawn per step, "
            "LayerDrop 0.1, no time masking"), build, step


def gpt2_grad_accum():
    """GPT-2 small, four micro-batches of independently drawn lengths accumulated per optimizer step."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    def build():
        with torch.device("cuda"):
            m = GPT2LMHeadModel(GPT2Config(n_positions=1024))
        return training(m)

    def step(state, i, rng):
        m, opt = state
        for _ in range(4):
            x = torch.randint(0, 50257, (8, rng.randint(128, 1024)), device="cuda")
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = m(input_ids=x, labels=x).loss / 4
            loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return ("GPT-2 small (124M), full FT, gradient accumulation: four micro-batches of 8 sequences per optimizer step, "
            "each of a length drawn from 128-1024"), build, step


def efficientnet_multires():
    """timm EfficientNet-B0: depthwise convolutions and squeeze-excitation, at four resolutions with the batch scaled."""
    return timm_multires("efficientnet_b0", {192: 96, 224: 72, 256: 56, 288: 44},
                         "timm EfficientNet-B0 (5.3M), channels-last, full FT, image side and batch drawn together from "
                         "192/96, 224/72, 256/56, 288/44")


def deeplabv3_crops():
    """torchvision DeepLabV3 (ResNet-50, dilated) semantic segmentation on random crops of varying size."""
    import torch
    import torchvision

    def build():
        m = torchvision.models.segmentation.deeplabv3_resnet50(weights=None, weights_backbone=None, num_classes=21,
                                                               aux_loss=True).cuda()
        return training(m)

    def step(state, i, rng):
        m, opt = state
        h, w = rng.choice([320, 384, 448, 512]), rng.choice([384, 448, 512, 576])
        x = torch.randn(8, 3, h, w, device="cuda")
        y = torch.randint(0, 21, (8, h, w), device="cuda")

        def loss():
            out = m(x)
            ce = torch.nn.functional.cross_entropy
            return ce(out["out"], y, ignore_index=255) + 0.4 * ce(out["aux"], y, ignore_index=255)

        bf16_step(m, opt, loss)

    return ("torchvision DeepLabV3 ResNet-50 with the auxiliary head (42M), full FT, batch 8 crops of height "
            "320-512 and width 384-576 drawn per step"), build, step


def distilbert_dynpad():
    """DistilBERT sequence classification with dynamic padding: batch 32, the batch's longest length drawn per step."""
    import torch
    from transformers import DistilBertConfig, DistilBertForSequenceClassification

    def build():
        with torch.device("cuda"):
            m = DistilBertForSequenceClassification(DistilBertConfig(num_labels=3))
        return training(m)

    def step(state, i, rng):
        m, opt = state
        n = rng.choice(range(32, 513, 16))
        x = torch.randint(0, 30522, (32, n), device="cuda")
        mask = torch.ones(32, n, dtype=torch.long, device="cuda")
        y = torch.randint(0, 3, (32,), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=x, attention_mask=mask, labels=y).loss)

    return "DistilBERT (67M) sequence classification, full FT, batch 32, padded length drawn from 32-512 in steps of 16", build, step


def swin_fixed():
    """timm Swin-T at 224x224: shifted-window attention, a fixed shape."""
    return timm_fixed("swin_tiny_patch4_window7_224", "timm Swin-T (28M), full FT, batch 64, 224x224 (fixed shape)")


def llama_bf16(layers):
    """A Llama-style LM (vocabulary 32k, hidden 2048, GQA 16/4) of the given depth, random weights in bf16 on the GPU."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=32000, hidden_size=2048, intermediate_size=5632, num_hidden_layers=layers,
                      num_attention_heads=16, num_key_value_heads=4, max_position_embeddings=2048)
    with torch.device("cuda"):
        return LlamaForCausalLM(cfg).to(torch.bfloat16)


def llama_packed_lora_ckpt():
    """Llama-style LM, LoRA r=16 on every projection, gradient checkpointing, packed batches of 2 x 2048 tokens."""
    import torch
    from peft import LoraConfig, get_peft_model

    def build():
        m = llama_bf16(16)
        m.gradient_checkpointing_enable()
        m.enable_input_require_grads()
        m.config.use_cache = False
        targets = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
        m = get_peft_model(m, LoraConfig(r=16, lora_alpha=32, target_modules=targets))
        return training(m)

    def step(state, i, rng):
        m, opt = state
        x = torch.randint(0, 32000, (2, 2048), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=x, labels=x).loss)

    return ("Llama-style LM (16 layers, hidden 2048, GQA 16/4), base frozen bf16, LoRA r=16 on every projection, "
            "gradient checkpointing, packed batches of 2 x 2,048 tokens (fixed shape)"), build, step


def gpt2_eval_interleaved():
    """GPT-2 small with an evaluation pass every third step and the losses kept on the device."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    def build():
        with torch.device("cuda"):
            m = GPT2LMHeadModel(GPT2Config(n_positions=1024))
        m, opt = training(m)
        return m, opt, []

    def step(state, i, rng):
        m, opt, losses = state
        x = torch.randint(0, 50257, (8, rng.randint(128, 1024)), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=x, labels=x).loss)
        if i % 3 == 2:
            m.eval()
            with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
                v = torch.randint(0, 50257, (16, rng.randint(256, 1024)), device="cuda")
                losses.append(m(input_ids=v, labels=v).loss.detach())
            m.train()

    return ("GPT-2 small (124M), full FT, batch 8 of lengths 128-1024; every third step an evaluation "
            "forward (no grad) of 16 sequences whose losses stay on the device"), build, step


def dcgan_full():
    """DCGAN on 64x64 images: a discriminator step and a generator step per iteration."""
    import torch
    from torch import nn

    def build():
        g = nn.Sequential(
            nn.ConvTranspose2d(100, 512, 4, 1, 0, bias=False), nn.BatchNorm2d(512), nn.ReLU(True),
            nn.ConvTranspose2d(512, 256, 4, 2, 1, bias=False), nn.BatchNorm2d(256), nn.ReLU(True),
            nn.ConvTranspose2d(256, 128, 4, 2, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU(True),
            nn.ConvTranspose2d(128, 64, 4, 2, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU(True),
            nn.ConvTranspose2d(64, 3, 4, 2, 1, bias=False), nn.Tanh()).cuda()
        d = nn.Sequential(
            nn.Conv2d(3, 64, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, True),
            nn.Conv2d(64, 128, 4, 2, 1, bias=False), nn.BatchNorm2d(128), nn.LeakyReLU(0.2, True),
            nn.Conv2d(128, 256, 4, 2, 1, bias=False), nn.BatchNorm2d(256), nn.LeakyReLU(0.2, True),
            nn.Conv2d(256, 512, 4, 2, 1, bias=False), nn.BatchNorm2d(512), nn.LeakyReLU(0.2, True),
            nn.Conv2d(512, 1, 4, 1, 0, bias=False)).cuda()
        g.train()
        d.train()
        return g, d, adamw(g.parameters()), adamw(d.parameters())

    def step(state, i, rng):
        g, d, og, od = state
        b = 256
        real = torch.randn(b, 3, 64, 64, device="cuda")
        z = torch.randn(b, 100, 1, 1, device="cuda")
        bce = nn.BCEWithLogitsLoss()
        with torch.autocast("cuda", dtype=torch.bfloat16):
            fake = g(z)
            ld = bce(d(real).view(-1), torch.ones(b, device="cuda")) + \
                bce(d(fake.detach()).view(-1), torch.zeros(b, device="cuda"))
        ld.backward()
        od.step()
        od.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            lg = bce(d(fake).view(-1), torch.ones(b, device="cuda"))
        lg.backward()
        og.step()
        og.zero_grad(set_to_none=True)
        od.zero_grad(set_to_none=True)

    return ("DCGAN, 64x64 images, batch 256: a discriminator step and a generator step per iteration, "
            "two AdamW optimizers"), build, step


def bart_summarization():
    """BART-base summarization: source and summary lengths drawn per step, label smoothing loss."""
    import torch
    from transformers import BartConfig, BartForConditionalGeneration

    def build():
        with torch.device("cuda"):
            m = BartForConditionalGeneration(BartConfig())
        return training(m)

    def step(state, i, rng):
        m, opt = state
        src = torch.randint(4, 50265, (8, rng.randint(256, 1024)), device="cuda")
        tgt = torch.randint(4, 50265, (8, rng.randint(32, 160)), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=src, labels=tgt).loss)

    return ("BART-base (140M) summarization, full FT, batch 8: source length 256-1024 and summary length "
            "32-160 drawn per step"), build, step


def lstm_seq2seq():
    """A two-layer LSTM encoder-decoder (cuDNN): packed sources of varying lengths, targets of varying lengths."""
    import torch
    from torch import nn

    class Seq2Seq(nn.Module):
        def __init__(self, vocab=32000, dim=1024):
            super().__init__()
            self.emb = nn.Embedding(vocab, dim)
            self.enc = nn.LSTM(dim, dim, num_layers=2, batch_first=True)
            self.dec = nn.LSTM(dim, dim, num_layers=2, batch_first=True)
            self.out = nn.Linear(dim, vocab)

        def forward(self, src, lengths, tgt):
            packed = nn.utils.rnn.pack_padded_sequence(self.emb(src), lengths, batch_first=True, enforce_sorted=False)
            _, state = self.enc(packed)
            y, _ = self.dec(self.emb(tgt[:, :-1]), state)
            return nn.functional.cross_entropy(self.out(y).flatten(0, 1).float(), tgt[:, 1:].flatten())

    def build():
        return training(Seq2Seq().cuda())

    def step(state, i, rng):
        m, opt = state
        b, n = 32, rng.randint(32, 256)
        lengths = torch.tensor([rng.randint(n // 2, n) for _ in range(b)])  # on the host, as packing wants
        src = torch.randint(0, 32000, (b, n), device="cuda")
        tgt = torch.randint(0, 32000, (b, rng.randint(16, 128)), device="cuda")
        bf16_step(m, opt, lambda: m(src, lengths, tgt))

    return ("LSTM encoder-decoder (2+2 layers, hidden 1024, vocabulary 32k), full FT, batch 32: packed sources of "
            "lengths n/2-n, n drawn from 32-256, targets 16-128"), build, step


def dlrm_embeddings():
    """DLRM-style recommender: eight embedding bags of 500k rows (dense gradients) and two MLPs, bag sizes drawn per step."""
    import torch
    from torch import nn

    tables, rows, dim = 8, 500_000, 64

    class DLRM(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.ModuleList(nn.EmbeddingBag(rows, dim, mode="sum") for _ in range(tables))
            self.bot = nn.Sequential(nn.Linear(13, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(), nn.Linear(256, dim))
            self.top = nn.Sequential(nn.Linear(dim * (tables + 1), 1024), nn.ReLU(), nn.Linear(1024, 512), nn.ReLU(),
                                     nn.Linear(512, 1))

        def forward(self, dense, idx, offs):
            z = [self.bot(dense).float()] + [e(i, o) for e, i, o in zip(self.emb, idx, offs)]
            return self.top(torch.cat(z, 1)).squeeze(1)

    def build():
        return training(DLRM().cuda())

    def step(state, i, rng):
        m, opt = state
        b = 4096
        dense = torch.randn(b, 13, device="cuda")
        idx, offs = [], []
        for _ in range(tables):
            per = rng.randint(1, 20)
            idx.append(torch.randint(0, rows, (b * per,), device="cuda"))
            offs.append(torch.arange(0, b * per, per, device="cuda"))
        y = torch.rand(b, device="cuda")
        bf16_step(m, opt, lambda: nn.functional.binary_cross_entropy_with_logits(m(dense, idx, offs).float(), y))

    return ("DLRM-style recommender: 8 embedding bags of 500k x 64 (dense gradients, AdamW), bottom and top MLPs, "
            "batch 4096, bag size 1-20 drawn per table and step"), build, step


def vit_dynres():
    """timm ViT-B/16 with dynamic image size: each step's side drawn from six, the batch scaled to keep pixels."""
    import torch

    sizes = {128: 128, 192: 64, 224: 48, 256: 36, 320: 24, 384: 16}

    def build():
        import timm

        m = timm.create_model("vit_base_patch16_224", pretrained=False, num_classes=1000, dynamic_img_size=True).cuda()
        return training(m)

    def step(state, i, rng):
        m, opt = state
        s = rng.choice(sorted(sizes))
        x = torch.randn(sizes[s], 3, s, s, device="cuda")
        y = torch.randint(0, 1000, (sizes[s],), device="cuda")
        bf16_step(m, opt, lambda: torch.nn.functional.cross_entropy(m(x), y))

    return ("timm ViT-B/16 (86M) with dynamic image size, full FT: side and batch drawn together from 128/128, "
            "192/64, 224/48, 256/36, 320/24, 384/16 (token count varies per step)"), build, step


def llama_rollout_lora():
    """Llama-style policy, RLHF-style: responses sampled with a growing KV cache, then a LoRA update on them."""
    import torch
    from peft import LoraConfig, get_peft_model

    def build():
        m = get_peft_model(llama_bf16(12), LoraConfig(r=16, lora_alpha=32, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]))
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, prompt, new = 8, rng.randint(64, 512), rng.randint(32, 128)
        x = torch.randint(0, 32000, (b, prompt), device="cuda")
        m.eval()
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            seq = m.generate(input_ids=x, attention_mask=torch.ones_like(x), max_new_tokens=new, min_new_tokens=new,
                             do_sample=True, top_k=50, pad_token_id=0)
        m.train()
        adv = torch.randn(b, 1, device="cuda")

        def loss():
            logp = torch.log_softmax(m(input_ids=seq).logits[:, prompt - 1:-1].float(), -1)
            taken = logp.gather(-1, seq[:, prompt:, None]).squeeze(-1)
            return -(taken * adv).mean()

        bf16_step(m, opt, loss)

    return ("Llama-style policy (12 layers, hidden 2048, GQA 16/4), base frozen bf16, LoRA r=16 on q/k/v/o, RLHF-style: "
            "batch 8, prompts of 64-512 tokens, 32-128 new tokens sampled with the KV cache, then a policy-gradient "
            "update on prompt and response"), build, step


def clip_contrastive():
    """CLIP-style dual encoder: ViT-B/16 image tower and a text transformer, batch and caption length drawn per step."""
    import torch
    from transformers import CLIPConfig, CLIPModel

    def build():
        cfg = CLIPConfig(text_config=dict(max_position_embeddings=77), vision_config=dict(image_size=224, patch_size=16))
        with torch.device("cuda"):
            m = CLIPModel(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, n = rng.choice([128, 192, 256]), rng.randint(8, 77)
        px = torch.randn(b, 3, 224, 224, device="cuda")
        ids = torch.randint(1, 49000, (b, n), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=ids, pixel_values=px, return_loss=True).loss)

    return ("CLIP-style dual encoder (ViT-B/16 image tower, 12-layer text tower), full FT: batch 128/192/256 and "
            "caption length 8-77 drawn per step, the b x b similarity and its contrastive loss"), build, step


def mamba_lm():
    """Mamba state-space LM (PyTorch's sequential scan, no fused kernel), lengths drawn per step."""
    import torch
    from transformers import MambaConfig, MambaForCausalLM

    def build():
        cfg = MambaConfig(vocab_size=32000, hidden_size=768, num_hidden_layers=6, state_size=16, use_mambapy=False)
        with torch.device("cuda"):
            m = MambaForCausalLM(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, n = 8, rng.randint(32, 128)
        x = torch.randint(0, 32000, (b, n), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=x, labels=x).loss)

    return ("Mamba state-space LM (6 layers, hidden 768, state 16) in PyTorch's sequential scan, full FT, batch 8, "
            "lengths 32-128"), build, step


def r3d_video():
    """torchvision R3D-18 video classifier: clip length, side and batch drawn together per step."""
    import torch

    clips = {(8, 112): 32, (16, 112): 16, (8, 160): 16, (16, 160): 8, (32, 112): 8}

    def build():
        from torchvision.models.video import r3d_18

        return training(r3d_18(weights=None, num_classes=400).cuda())

    def step(state, i, rng):
        m, opt = state
        t, side = rng.choice(sorted(clips))
        b = clips[(t, side)]
        x = torch.randn(b, 3, t, side, side, device="cuda")
        y = torch.randint(0, 400, (b,), device="cuda")
        bf16_step(m, opt, lambda: torch.nn.functional.cross_entropy(m(x), y))

    return ("torchvision R3D-18 video classifier (33M, 3D convolutions), full FT: frames/side/batch drawn together "
            "from 8/112/32, 16/112/16, 8/160/16, 16/160/8, 32/112/8"), build, step


def bert_distill():
    """Knowledge distillation: a frozen BERT-base teacher's logits taught to a DistilBERT student, dynamic padding."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, DistilBertConfig, DistilBertForMaskedLM

    def build():
        with torch.device("cuda"):
            teacher = BertForMaskedLM(BertConfig())
            student = DistilBertForMaskedLM(DistilBertConfig())
        teacher.eval()
        for p in teacher.parameters():
            p.requires_grad_(False)
        return (teacher,) + training(student)

    def step(state, i, rng):
        teacher, student, opt = state
        b, n = 32, rng.randint(32, 256)
        x = torch.randint(1000, 30000, (b, n), device="cuda")
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            t = teacher(input_ids=x).logits

        def loss():
            s = student(input_ids=x).logits
            return torch.nn.functional.kl_div(torch.log_softmax(s.float() / 2, -1), torch.softmax(t.float() / 2, -1),
                                              reduction="batchmean")

        bf16_step(student, opt, loss)

    return ("knowledge distillation: frozen BERT-base teacher (110M, no grad) and DistilBERT student (66M), full FT "
            "of the student on the KL of their 30k-vocabulary logits, batch 32, lengths 32-256"), build, step


def sage_gnn():
    """GraphSAGE-style message passing over random graphs whose node and edge counts change every step."""
    import torch

    class SAGE(torch.nn.Module):
        def __init__(self, d_in, d_h, layers, classes):
            super().__init__()
            dims = [d_in] + [d_h] * layers
            self.own = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(dims[:-1], dims[1:]))
            self.nbr = torch.nn.ModuleList(torch.nn.Linear(a, b, bias=False) for a, b in zip(dims[:-1], dims[1:]))
            self.out = torch.nn.Linear(d_h, classes)

        def forward(self, x, src, dst, deg):
            h = x
            for own, nbr in zip(self.own, self.nbr):
                agg = torch.zeros_like(h).index_add_(0, dst, h[src]) / deg[:, None]
                h = torch.relu(own(h) + nbr(agg))
            return self.out(h)

    def build():
        return training(SAGE(128, 256, 4, 40).cuda())

    def step(state, i, rng):
        m, opt = state
        n = rng.randint(20000, 120000)
        e = n * rng.choice([8, 12, 16])
        x = torch.randn(n, 128, device="cuda")
        src = torch.randint(0, n, (e,), device="cuda")
        dst = torch.randint(0, n, (e,), device="cuda")
        deg = torch.bincount(dst, minlength=n).clamp_(min=1).float()
        y = torch.randint(0, 40, (n,), device="cuda")
        loss = torch.nn.functional.cross_entropy(m(x, src, dst, deg), y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    return ("GraphSAGE-style GNN (4 layers, hidden 256, mean aggregation by index_add), float32, full-graph training "
            "on a random graph per step: 20k-120k nodes, 8-16 edges per node"), build, step


def vitmae_pretrain():
    """ViT-MAE masked-autoencoder pretraining: 75% of the patches masked at random, the batch drawn per step."""
    import torch
    from transformers import ViTMAEConfig, ViTMAEForPreTraining

    def build():
        with torch.device("cuda"):
            m = ViTMAEForPreTraining(ViTMAEConfig())
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b = rng.choice([32, 48, 64, 96])
        x = torch.randn(b, 3, 224, 224, device="cuda")
        bf16_step(m, opt, lambda: m(pixel_values=x).loss)

    return ("ViT-MAE base (encoder ViT-B/16, 8-layer decoder), pretraining with 75% of the patches masked at random, "
            "224x224, batch drawn per step from 32-96"), build, step


def segformer_crops():
    """SegFormer (Mix Transformer) semantic segmentation on square crops whose side is drawn per step."""
    import torch
    from transformers import SegformerConfig, SegformerForSemanticSegmentation

    def build():
        cfg = SegformerConfig(num_labels=150, depths=[3, 4, 6, 3], hidden_sizes=[64, 128, 320, 512],
                              decoder_hidden_size=768)
        with torch.device("cuda"):
            m = SegformerForSemanticSegmentation(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        side, b = rng.choice([(384, 16), (512, 8), (640, 6), (768, 4)])
        x = torch.randn(b, 3, side, side, device="cuda")
        y = torch.randint(0, 150, (b, side, side), device="cuda")
        bf16_step(m, opt, lambda: m(pixel_values=x, labels=y).loss)

    return ("SegFormer-B2-shaped semantic segmentation (Mix Transformer encoder, 150 classes), full FT, square crops "
            "of 384-768 with the batch scaled, drawn per step"), build, step


def electra_pretrain():
    """ELECTRA replaced-token detection: a small generator fills masked tokens, a base discriminator spots them."""
    import torch
    from transformers import ElectraConfig, ElectraForMaskedLM, ElectraForPreTraining

    def build():
        with torch.device("cuda"):
            gen = ElectraForMaskedLM(ElectraConfig(embedding_size=768, hidden_size=256, num_attention_heads=4,
                                                   intermediate_size=1024))
            disc = ElectraForPreTraining(ElectraConfig(embedding_size=768, hidden_size=768, num_attention_heads=12,
                                                       intermediate_size=3072))
        gen.train()
        disc.train()
        return gen, disc, adamw(list(gen.parameters()) + list(disc.parameters()))

    def step(state, i, rng):
        gen, disc, opt = state
        b, n = 32, rng.randint(64, 512)
        x = torch.randint(1000, 30522, (b, n), device="cuda")
        pick = torch.rand(b, n, device="cuda") < 0.15
        labels = torch.full_like(x, -100)
        labels[pick] = x[pick]
        masked = x.masked_fill(pick, 103)

        def loss():
            g = gen(input_ids=masked, labels=labels)
            with torch.no_grad():
                sampled = torch.distributions.Categorical(logits=g.logits[pick].float()).sample()
            fake = x.clone()
            fake[pick] = sampled
            d = disc(input_ids=fake, labels=(fake != x).long())
            return g.loss + 50 * d.loss

        bf16_step(disc, opt, loss)

    return ("ELECTRA pretraining: generator (hidden 256) and discriminator (ELECTRA-base, 110M) trained together on "
            "replaced-token detection, batch 32, lengths 64-512, 15% masked"), build, step


def trocr_captions():
    """Image-to-text (TrOCR-style): a ViT-B/16 encoder at 384x384 and a GPT-2 decoder with cross-attention."""
    import torch
    from transformers import GPT2Config, ViTConfig, VisionEncoderDecoderConfig, VisionEncoderDecoderModel

    def build():
        cfg = VisionEncoderDecoderConfig.from_encoder_decoder_configs(ViTConfig(image_size=384), GPT2Config())
        cfg.decoder_start_token_id = cfg.pad_token_id = 50256
        with torch.device("cuda"):
            m = VisionEncoderDecoderModel(config=cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, n = rng.choice([16, 24, 32]), rng.randint(16, 128)
        x = torch.randn(b, 3, 384, 384, device="cuda")
        y = torch.randint(0, 50256, (b, n), device="cuda")
        bf16_step(m, opt, lambda: m(pixel_values=x, labels=y).loss)

    return ("Image-to-text encoder-decoder (TrOCR-style): ViT-B/16 encoder at 384x384, GPT-2 small decoder with "
            "cross-attention, full FT, batch 16-32 and caption length 16-128 drawn per step"), build, step


def switch_moe():
    """Switch Transformer: an encoder-decoder whose feed-forward layers route each token to one of 8 experts."""
    import torch
    from transformers import SwitchTransformersConfig, SwitchTransformersForConditionalGeneration

    def build():
        cfg = SwitchTransformersConfig(num_experts=8, num_layers=6, num_decoder_layers=6, num_sparse_encoder_layers=2,
                                       num_sparse_decoder_layers=2, decoder_start_token_id=0, pad_token_id=0)
        with torch.device("cuda"):
            m = SwitchTransformersForConditionalGeneration(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b, src, tgt = 16, rng.randint(64, 512), rng.randint(16, 128)
        x = torch.randint(1, 32128, (b, src), device="cuda")
        y = torch.randint(1, 32128, (b, tgt), device="cuda")
        bf16_step(m, opt, lambda: m(input_ids=x, labels=y).loss)

    return ("Switch Transformer (6+6 layers, hidden 768, every other feed-forward layer 8 experts with top-1 routing), "
            "full FT, batch 16, source 64-512 and target 16-128 tokens drawn independently"), build, step


def longformer_mlm():
    """Longformer masked LM: sliding-window attention over long documents, length drawn per step."""
    import torch
    from transformers import LongformerConfig, LongformerForMaskedLM

    def build():
        cfg = LongformerConfig(attention_window=256, max_position_embeddings=4098)
        with torch.device("cuda"):
            m = LongformerForMaskedLM(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        n = rng.choice([1024, 1536, 2048, 3072, 4096])
        masked_lm_step(m, opt, 8192 // n, n, 1000, 30000, 4)

    return ("Longformer-base masked LM (sliding-window attention, window 256), full FT, documents of 1024-4096 "
            "tokens drawn per step with the batch scaled to 8192 tokens, 15% masked"), build, step


def esm2_protein_mlm():
    """ESM-2-shaped protein language model (rotary positions, 33-token vocabulary), masked LM on sequences whose length varies per step."""
    import torch
    from transformers import EsmConfig, EsmForMaskedLM

    def build():
        cfg = EsmConfig(vocab_size=33, hidden_size=640, num_hidden_layers=30, num_attention_heads=20,
                        intermediate_size=2560, position_embedding_type="rotary", max_position_embeddings=1026,
                        mask_token_id=32, pad_token_id=1, token_dropout=False)
        with torch.device("cuda"):
            m = EsmForMaskedLM(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        n = rng.randint(128, 1024)
        masked_lm_step(m, opt, max(1, 16384 // n), n, 4, 24, 32)

    return ("ESM-2-shaped protein masked LM (150M: 30 layers, hidden 640, rotary positions, 33-token vocabulary), "
            "full FT, sequences of 128-1024 residues drawn per step with the batch scaled to 16k tokens, 15% masked"), \
        build, step


def detr_detection():
    """DETR set-prediction detector (ResNet-50 backbone, 6+6 transformer layers), Hungarian-matched loss, images of varying size."""
    import torch
    from transformers import DetrConfig, DetrForObjectDetection

    def build():
        cfg = DetrConfig(use_timm_backbone=True, backbone="resnet50", use_pretrained_backbone=False, num_labels=91)
        with torch.device("cuda"):
            m = DetrForObjectDetection(cfg)
        return training(m)

    def step(state, i, rng):
        m, opt = state
        b = 4
        h, w = rng.choice([480, 544, 608, 672, 736, 800]), rng.randint(480, 1066)
        x = torch.rand(b, 3, h, w, device="cuda")
        labels = []
        for _ in range(b):
            k = rng.randint(1, 30)
            cxcy = torch.rand(k, 2, device="cuda") * 0.8 + 0.1
            wh = torch.rand(k, 2, device="cuda") * 0.2 + 0.01
            labels.append({"class_labels": torch.randint(0, 91, (k,), device="cuda"),
                           "boxes": torch.cat([cxcy, wh], dim=1)})
        bf16_step(m, opt, lambda: m(pixel_values=x, labels=labels).loss)

    return ("DETR (ResNet-50 backbone, 6+6 transformer layers, 100 queries) object detection with the Hungarian-matched "
            "set loss, full FT, batch 4 images of 480-800 x 480-1066 with 1-30 boxes each, size drawn per step"), build, step


WORKLOADS = {
    "t5base-encdec-full": t5_encdec,
    "mixtral-moe-full": mixtral_moe,
    "vitb16-fixed-full": vit_fixed,
    "resnet50-multiscale-full": resnet_multiscale,
    "bertbase-mlm-full": bert_mlm,
    "qwen150k-lora": qwen_lora,
    "debertav2-mlm-full": deberta_mlm,
    "convnext-multiscale-full": convnext_multiscale,
    "gpt2medium-tokenbudget-ckpt": gpt2_token_budget_ckpt,
    "fasterrcnn-detection-full": fasterrcnn_detection,
    "vits16-multicrop-full": vit_multicrop,
    "unet-aspectbuckets-full": unet_aspect_buckets,
    "whisper-seq2seq-full": whisper_seq2seq,
    "wav2vec2-ctc-full": wav2vec2_ctc,
    "gpt2-gradaccum-full": gpt2_grad_accum,
    "efficientnet-multires-full": efficientnet_multires,
    "deeplabv3-segcrops-full": deeplabv3_crops,
    "distilbert-dynpad-full": distilbert_dynpad,
    "swint-fixed-full": swin_fixed,
    "llama-packed-lora-ckpt": llama_packed_lora_ckpt,
    "gpt2-evalinterleaved-full": gpt2_eval_interleaved,
    "dcgan-full": dcgan_full,
    "bart-summarization-full": bart_summarization,
    "lstm-seq2seq-full": lstm_seq2seq,
    "dlrm-embeddings-full": dlrm_embeddings,
    "vit-dynres-full": vit_dynres,
    "llama-rollout-lora": llama_rollout_lora,
    "clip-contrastive-full": clip_contrastive,
    "mamba-lm-full": mamba_lm,
    "r3d18-video-full": r3d_video,
    "bert-distill-dynpad": bert_distill,
    "sage-gnn-full": sage_gnn,
    "vitmae-pretrain-full": vitmae_pretrain,
    "segformer-segcrops-full": segformer_crops,
    "electra-rtd-full": electra_pretrain,
    "trocr-captions-full": trocr_captions,
    "switch-moe-full": switch_moe,
    "longformer-mlm-full": longformer_mlm,
    "esm2-protein-mlm-full": esm2_protein_mlm,
    "detr-detection-full": detr_detection,
}


def start_history(torch):
    kw = dict(enabled="all", context=None, stacks="python")
    try:
        torch.cuda.memory._record_memory_history(clear_history=True, **kw)
    except TypeError:
        torch.cuda.memory._record_memory_history(**kw)


def convert(entries, name, version):
    """History entries -> (text lines, events, iterations). Starts after the last START_MARKER."""
    start = 0
    for k, e in enumerate(entries):
        if e["action"] == "alloc" and e["size"] == START_MARKER:
            start = k + 1
    keep = [e for e in entries[start:] if e["action"] in ("alloc", "free_completed")]
    lines, live, next_id, iters = [], {}, 0, 0
    k = 0
    while k < len(keep):
        e = keep[k]
        if e["action"] == "alloc":
            if e["size"] == START_MARKER:
                k += 1
                continue
            if (e["size"] == ITER_MARKER and k + 1 < len(keep) and keep[k + 1]["action"] == "free_completed"
                    and keep[k + 1]["addr"] == e["addr"]):
                lines.append("i %d" % iters)
                iters += 1
                k += 2
                continue
            live[e["addr"]] = next_id
            lines.append("a %d %d %d" % (next_id, e["size"], e["stream"]))
            next_id += 1
        elif e["addr"] in live:
            lines.append("f %d" % live.pop(e["addr"]))
        k += 1
    events = sum(1 for l in lines if l[0] != "i")
    head = "# workload %s torch %s events %d iterations %d" % (name, version, events, iters)
    return [head] + lines, events, iters


def run_workload(torch, name, factory, iters, deadline, outdir, seed):
    desc, build, step = factory()
    rng = random.Random(seed)
    torch.manual_seed(seed)
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    start_history(torch)
    marker(START_MARKER)
    state = build()
    torch.cuda.synchronize()
    times = []
    for i in range(iters):
        if i >= 8 and time.monotonic() > deadline:
            break
        marker(ITER_MARKER)
        t0 = time.perf_counter()
        step(state, i, rng)
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    peak_alloc, peak_res = torch.cuda.max_memory_allocated(), torch.cuda.max_memory_reserved()
    del state
    gc.collect()
    torch.cuda.empty_cache()
    dev = [t for t in snap["device_traces"] if t]
    if len(dev) != 1:
        raise RuntimeError("%s: history on %d devices" % (name, len(dev)))
    lines, events, got = convert(dev[0], name, torch.__version__)
    path = os.path.join(outdir, name + ".trace.gz")
    with gzip.open(path, "wt", compresslevel=9) as f:
        f.write("\n".join(lines) + "\n")
    steady = times[3:] or times
    return {
        "trace": name + ".trace.gz",
        "step_s": round(statistics.median(steady), 4),
        "model": desc,
        "iterations": got,
        "events": events,
        "step_times_s": [round(t, 4) for t in times],
        "peak_allocated": peak_alloc,
        "peak_reserved": peak_res,
        "measured": "step_s: median of iterations 3+, allocation history on, default allocator; "
                    "peak_allocated/peak_reserved: torch.cuda.max_memory_allocated/reserved over the run",
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--iterations", type=int, default=16)
    ap.add_argument("--deadline", type=float, default=170, help="seconds; later workloads are skipped, "
                    "running ones stop after 8 iterations")
    ap.add_argument("--only", default="", help="comma-separated workload names")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    began = time.monotonic()
    deadline = began + a.deadline
    import torch

    os.makedirs(a.outdir, exist_ok=True)
    names = [n for n in (a.only.split(",") if a.only else WORKLOADS) if n]
    print("torch", torch.__version__, torch.cuda.get_device_name(0), "import %.1fs" % (time.monotonic() - began),
          flush=True)
    failed = 0
    with open(os.path.join(a.outdir, "steps.jsonl"), "a") as out:
        for n in names:
            if time.monotonic() > deadline - 10:
                print("skip", n, "(deadline)", flush=True)
                continue
            t0 = time.monotonic()
            try:
                rec = run_workload(torch, n, WORKLOADS[n], a.iterations, deadline, a.outdir, a.seed)
            except Exception:
                failed += 1
                print("FAIL", n, flush=True)
                traceback.print_exc()
                torch.cuda.memory._record_memory_history(enabled=None)
                gc.collect()
                torch.cuda.empty_cache()
                continue
            rec["device"] = torch.cuda.get_device_name(0)
            rec["torch"] = torch.__version__
            out.write(json.dumps(rec) + "\n")
            out.flush()
            print("%s: %d iterations, %d events, step %.4fs, peak allocated %.2f GiB, reserved %.2f GiB, %.1fs"
                  % (n, rec["iterations"], rec["events"], rec["step_s"], rec["peak_allocated"] / 2**30,
                     rec["peak_reserved"] / 2**30, time.monotonic() - t0), flush=True)
    print("done in %.1fs, %d failed" % (time.monotonic() - began, failed), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
