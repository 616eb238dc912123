/* vit_fields.h — the ViT's configuration, one row per field. Everything about a field that is not
 * its forward code follows from its row (an X-macro list, expanded where each piece is needed):
 *   the vg_vit_config member                          vit.h
 *   its default (vg_vit_config_default)                vit/fields.c
 *   its range, checked by vg_vit_config_check          vit/fields.c (rules between fields: vit.c)
 *   the checkpoint metadata "model.<name>", both ways  checkpoint/model_meta.c
 *   whether vg_vit_config_diff compares it             checkpoint/model_meta.c
 *   the ./train flag, its range and --help line        run/options.c
 * Adding an option: one row here, then its forward (and, for a new tensor, its slot in
 * vg_vit_slots: the parameter and tensor counts are taken from the slots).
 *
 * X(KIND, type, name, default, lo, hi, META, CMP, flag, metavar, help)
 *   KIND     INT (int), REAL (double), BOOL (bool, "0"/"1" in metadata), CHOICE (an enum whose
 *            values are the positions of the names in `metavar`, "a|b"), STEM (the conv stem's
 *            channel list, "C1,C2,…")
 *   name     the member, the metadata key (model.<name>) and timm's argument name where timm has one
 *   lo, hi   the accepted range (INT, REAL; also for a STEM's channel counts), bounds included;
 *            the upper bounds are far above any ViT (ViT-22B: 6144 wide, 48 deep) yet keep every
 *            derived size from overflowing: a configuration can come from damaged metadata
 *   META     ALWAYS: written to every checkpoint; IF_SET: written only when not the default, so
 *            a checkpoint without the feature is byte for byte what it was before the field existed
 *   CMP      SAME: vg_vit_config_diff compares the value (it shapes the parameters or the forward);
 *            ON("label"): compares only whether it is > 0; NO: not compared (dropout rates, and
 *            img_size, which --init interpolates)
 *   flag     the ./train flag ("--patch"; NULL: none), metavar, help ('\n' continues the
 *            help on the next line; "(default …)" is appended unless the help gives it)
 * The order is the order of the metadata keys in a checkpoint and of the flags in --help. */
#ifndef VG_VIT_FIELDS_H
#define VG_VIT_FIELDS_H

#define VG_VIT_FIELDS(X) \
    X(INT,    int,    img_size,       32,   1, 16384,     ALWAYS, NO,   "--img-size", "N", \
      "input resolution (square)") \
    X(INT,    int,    patch_size,     4,    1, 16384,     ALWAYS, SAME, "--patch",   "N", \
      "patch size") \
    X(INT,    int,    in_chans,       3,    1, 1024,      ALWAYS, SAME, NULL,        NULL, NULL) \
    /* 0: no head, the model outputs its pooled features (timm's num_classes=0) */ \
    X(INT,    int,    num_classes,    10,   0, 1 << 24,   ALWAYS, SAME, "--num-classes", "N", \
      "classes of the head (timm's name; default: the data's: class folders\n" \
      "of an image folder, 10 for CIFAR-10 and Fashion-MNIST). --init from\n" \
      "a checkpoint with another head replaces the head (new weights)") \
    X(INT,    int,    embed_dim,      192,  1, 16384,     ALWAYS, SAME, "--dim",     "N", \
      "embedding width") \
    X(INT,    int,    depth,          6,    1, 1024,      ALWAYS, SAME, "--depth",   "N", \
      "number of transformer blocks") \
    X(INT,    int,    num_heads,      3,    1, 16384,     ALWAYS, SAME, "--heads",   "N", \
      "attention heads") \
    /* hidden = (int)(embed_dim · mlp_ratio); 4 in the paper */ \
    X(REAL,   double, mlp_ratio,      4.0,  0.01, 1024,   ALWAYS, SAME, "--mlp-ratio", "X", \
      "MLP hidden width / embedding width") \
    X(BOOL,   bool,   qkv_bias,       true, 0, 1,         ALWAYS, SAME, NULL,        NULL, NULL) \
    /* after the pos-embed add, after GELU and fc2, after attn proj */ \
    X(REAL,   double, drop_rate,      0.0,  0, 0.99,      ALWAYS, NO,   "--drop",    "P", \
      "dropout after the embedding, attention proj and MLP") \
    X(REAL,   double, attn_drop_rate, 0.0,  0, 0.99,      ALWAYS, NO,   "--attn-drop", "P", \
      "dropout on the attention probabilities") \
    /* stochastic depth: block i drops each residual branch per sample with rate
     * drop_path_rate·i/(depth−1) (timm's linspace) */ \
    X(REAL,   double, drop_path_rate, 0.0,  0, 0.99,      ALWAYS, NO,   "--drop-path", "P", \
      "stochastic depth: block i drops each residual branch per sample\n" \
      "with rate P*i/(depth-1) (timm's linspace)") \
    /* patch dropout (timm's patch_drop_rate): in training each sample keeps max(1, ⌊N·(1 − rate)⌋)
     * of its N patch tokens (and the prefix tokens) from after the position embedding on */ \
    X(REAL,   double, patch_drop_rate, 0.0, 0, 0.99,      IF_SET, NO,   "--patch-drop", "P", \
      "patch dropout (timm's patch_drop_rate): in training each image\n" \
      "keeps a random max(1, floor(N*(1-P))) of its N patch tokens, so\n" \
      "every block costs less; evaluation sees them all") \
    /* overlapping patch embedding: kernel P + 2o, stride P, zero padding o; the grid stays
     * (img/P)²; 0 = timm's patchify (kernel = stride = P). Not a timm layout */ \
    X(INT,    int,    patch_overlap,  0,    0, 64,        IF_SET, SAME, "--patch-overlap", "N", \
      "overlapping patch embedding: the patch conv's kernel reaches N pixels\n" \
      "into each neighbouring patch (kernel patch+2N, stride patch, padding\n" \
      "N); the token grid is unchanged; not a timm layout") \
    /* a convolutional stem before the patch conv (Xiao et al. 2021, "Early convolutions help
     * transformers see better", without its BatchNorm): layer i a 3×3 conv, stride 2, padding 1,
     * to conv_stem[i] channels, then ReLU; the list ends at the first 0. With n layers the patch
     * conv sees the image at 1/2^n of its size: kernel P/2^n (+ 2·patch_overlap), stride P/2^n,
     * so the token grid is unchanged. Keys patch_embed.backbone.{i}.conv.*, as timm's HybridEmbed
     * names its backbone; not a timm model. lo, hi: each layer's channels */ \
    X(STEM,   vg_vit_stem, conv_stem, {0},  1, 4096,      IF_SET, SAME, "--conv-stem", "C1[,C2..]", \
      "a convolutional stem before the patch conv: per channel count one\n" \
      "3x3 conv, stride 2, padding 1, then ReLU; the patch conv then has\n" \
      "kernel and stride patch/2^layers (plus --patch-overlap); the token\n" \
      "grid is unchanged; not a timm layout") \
    /* CCT's convolutional tokenizer (Hassani et al. 2021) in place of the strided convs: each stem
     * layer a 3×3 conv at stride 1, padding 1, then ReLU, then a 3×3 max pool at stride 2, padding
     * 1 (the same halving, the same keys; the conv runs at 4× the FLOPs) */ \
    X(BOOL,   bool,   stem_pool,      false, 0, 1,        IF_SET, SAME, "--stem-pool", "0|1", \
      "CCT's tokenizer: each --conv-stem layer convolves at stride 1 and\n" \
      "halves the map with a 3x3 max pool at stride 2 (4x the stem's FLOPs)") \
    /* the class token, the mean of the N patch tokens (timm's global_pool='avg'), or sequence
     * pooling (CCT's SeqPool): the patch tokens weighted by softmax over tokens of x·seq_pool.weight */ \
    X(CHOICE, vg_vit_pool, pool, VG_VIT_POOL_CLS, 0, 2, ALWAYS, SAME, "--pool",  "cls|mean|seq", \
      "class token, mean of the patch tokens, or sequence pooling (CCT):\n" \
      "the patch tokens weighted by a learned softmax over the tokens") \
    /* learned: a trained parameter (timm); sincos2d: MAE's fixed 2-D sin-cos table */ \
    X(CHOICE, vg_vit_posembed, pos_embed, VG_VIT_POS_LEARNED, 0, 1, ALWAYS, SAME, "--pos", "learned|sincos2d", \
      "position embedding: learned, or the fixed 2-D sin-cos table (MAE)") \
    /* every LayerNorm; 1e-6 as timm's ViT */ \
    X(REAL,   double, norm_eps,       1e-6, 0, 1,         ALWAYS, NO,   NULL,        NULL, NULL) \
    /* timm's layout variants (augreg/DeiT use the defaults; DeiT-3 and DINOv2 no_embed_class and
     * init_values; "reg4" models reg_tokens; "gap" models class_token false, mean pooling and
     * fc_norm). class_token: a cls_token (1, 1, D) in front; false: none, pooling must be mean */ \
    X(BOOL,   bool,   class_token,    true, 0, 1,         ALWAYS, SAME, NULL,        NULL, NULL) \
    /* R register tokens reg_token (1, R, D) after the class token; never pooled */ \
    X(INT,    int,    reg_tokens,     0,    0, 1024,      ALWAYS, SAME, "--reg-tokens", "N", \
      "N learned register tokens after the class token (timm's reg_tokens,\n" \
      "Darcet et al. 2023); they attend and are attended to, and are never\n" \
      "pooled nor dropped by --patch-drop") \
    /* pos_embed (1, N, D) covers the patches only and is added before the prefix tokens are put in
     * front (timm's _pos_embed); false: pos_embed (1, S + N, D) is added to every row */ \
    X(BOOL,   bool,   no_embed_class, false, 0, 1,        ALWAYS, SAME, NULL,        NULL, NULL) \
    /* the final LayerNorm after pooling (fc_norm.*) instead of before it (norm.*): timm's default
     * with global_pool='avg' */ \
    X(BOOL,   bool,   fc_norm,        false, 0, 1,        ALWAYS, SAME, NULL,        NULL, NULL) \
    /* > 0: LayerScale, blocks.{i}.ls1.gamma / ls2.gamma (D) start at this value and scale each
     * residual branch; 0: none */ \
    X(REAL,   double, init_values,    0.0,  0, 1e6,       ALWAYS, ON("LayerScale"), "--layer-scale", "X", \
      "LayerScale (CaiT; timm's init_values): each residual branch is\n" \
      "scaled per channel by a learned gamma that starts at X; 0 = off") \
    /* locality self-attention (Lee et al. 2021): per block a learned log-temperature
     * blocks.{i}.attn.scale (1), starting at log(head_dim^-1/2), and no token attends to itself */ \
    X(BOOL,   bool,   lsa,            false, 0, 1,        IF_SET, SAME, "--lsa",     "0|1", \
      "locality self-attention (Lee et al. 2021): a learned temperature\n" \
      "per attention layer and no token attending to itself; 1 = on")

#endif
