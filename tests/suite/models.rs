//! Parameter counts against published figures (data/models/PUBLISHED_PARAMS.md lists the
//! sources), and config.json field mapping for the bundled families.

use ridgeline::model::ModelDb;

fn params(id: &str) -> (u64, u64) {
    let p = ModelDb::builtin().unwrap().resolve(id).unwrap().params();
    (p.total, p.active)
}

#[test]
fn exact_counts_match_hugging_face() {
    // Exact safetensors parameter counts from the Hugging Face model pages.
    for (id, published) in [
        ("llama-2-7b", 6_738_415_616u64),
        ("llama-7b", 6_738_415_616),
        ("llama-2-13b", 13_015_864_320),
        ("llama-2-70b", 68_976_648_192),
        ("llama-3-8b", 8_030_261_248),
        ("llama-3.1-8b", 8_030_261_248),
        ("llama-3-70b", 70_553_706_496),
        ("llama-3.1-70b", 70_553_706_496),
        ("mistral-7b", 7_241_732_096),
        ("mixtral-8x7b", 46_702_792_704),
        ("qwen2.5-7b", 7_615_616_512),
        ("qwen2.5-coder-3b", 3_085_938_688),
    ] {
        assert_eq!(params(id).0, published, "{id}");
    }
}

#[test]
fn mixtral_active_params() {
    // Mistral: "12.9B active"; exact: total - 32 layers · 6 unused experts · 3·4096·14336
    // = 46,702,792,704 - 33,822,867,456 = 12,879,925,248.
    assert_eq!(params("mixtral-8x7b").1, 12_879_925_248);
    assert_eq!(params("llama-2-7b").0, params("llama-2-7b").1);
}

#[test]
fn rounded_published_counts() {
    // Model cards / papers print rounded totals: MPT-7B "6.7B", MPT-30B "29.95B",
    // GPT-3 paper Table 2.1 "1.3B", "2.7B", "175.0B", Llama 3.1 "405B".
    for (id, published_b, tol) in [
        ("mpt-7b", 6.7, 0.06),
        ("mpt-30b", 29.95, 0.01),
        ("gpt3-1.3b", 1.3, 0.02),
        ("gpt3-2.7b", 2.7, 0.05),
        ("gpt3-175b", 175.0, 0.5),
        ("llama-3.1-405b", 405.0, 1.0),
        ("codellama-7b", 6.74, 0.01),
    ] {
        let b = params(id).0 as f64 / 1e9;
        assert!((b - published_b).abs() <= tol, "{id}: {b} vs {published_b}");
    }
}

#[test]
fn family_mapping() {
    let db = ModelDb::builtin().unwrap();
    let mpt = db.resolve("mpt-7b").unwrap();
    assert!(!mpt.gated_mlp && mpt.tied_embeddings && !mpt.learned_positions && !mpt.qkv_bias);
    assert_eq!(mpt.intermediate, 4 * 4096);
    let gpt = db.resolve("gpt3-175b").unwrap();
    assert!(gpt.learned_positions && gpt.qkv_bias && gpt.mlp_bias && gpt.tied_embeddings);
    let qwen = db.resolve("qwen2.5-7b").unwrap();
    assert!(qwen.qkv_bias && !qwen.o_bias && qwen.gated_mlp);
    let l70 = db.resolve("llama-2-70b").unwrap();
    assert_eq!((l70.heads, l70.kv_heads, l70.head_dim), (64, 8, 128));
    assert_eq!(db.models().len(), 42);
}
