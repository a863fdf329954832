/* One ON-LSTM time step, forward and backward, fused into a single pass per batch row (CPU, float32).
 *
 * The same maths as `_torch_steps` / `_torch_backward` in model.py, which run it as a dozen
 * separate torch kernels per step; here it is one loop over the neurons of a row, vectorized by the
 * compiler (glibc's vector expf/tanhf). The recurrent matmul stays in torch (oneDNN), between calls.
 *
 * Layouts (row b of a batch, H = n * chunk neurons, n levels):
 *   gates   [m_i (n) | m_f (n) | o | c_hat | i | f (H each)]   pre-activations, row stride `stride`
 *   masters [i_master (n) | f_master (n)]                       the master gates, at level resolution
 *   probs   [softmax(m_i) (n) | softmax(m_f) (n)]
 *   acts    [sigmoid(o) | tanh(c_hat) | sigmoid(i) | sigmoid(f)]
 */
#include <math.h>
#include <stdlib.h>

/* glibc's vector expf/tanhf (libmvec), which <math.h> only declares under -ffast-math; that flag would
 * also approximate divisions and switch the whole process to flush-to-zero, so it is not used. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((__simd__("notinbranch"))) float expf(float);
__attribute__((__simd__("notinbranch"))) float tanhf(float);
#endif

/* Clamped so that expf never overflows or underflows: libmvec handles those lanes with slow scalar code,
 * and sigmoid(±80) is 0 or 1 to float precision anyway. NaN stays NaN. */
static inline float sigmoid(float x) {
    x = x < -80.0f ? -80.0f : x > 80.0f ? 80.0f : x;
    return 1.0f / (1.0f + expf(-x));
}

static void softmax(const float *x, float *p, int n) {
    float top = x[0], total = 0.0f;
    for (int k = 1; k < n; k++) top = x[k] > top ? x[k] : top;
    for (int k = 0; k < n; k++) total += (p[k] = expf(x[k] - top));
    for (int k = 0; k < n; k++) p[k] /= total;
}

/* f_master = cumsum(p_f); i_master = 1 - cumsum(p_i) ("paper") or the reverse cumsum of p_i ("symmetric"). */
static void master_gates(const float *p, float *m, int n, int symmetric) {
    float run = 0.0f;
    for (int k = 0; k < n; k++) m[n + k] = (run += p[n + k]);
    run = 0.0f;
    if (symmetric) {
        for (int k = n - 1; k >= 0; k--) m[k] = (run += p[k]);
    } else {
        for (int k = 0; k < n; k++) m[k] = 1.0f - (run += p[k]);
    }
}

/* The master gates repeated over the chunk of each level, so the neuron loop below is flat. */
static void expand(const float *m, float *mi_full, float *mf_full, int n, int chunk) {
    for (int k = 0; k < n; k++)
        for (int j = 0; j < chunk; j++) {
            mi_full[k * chunk + j] = m[k];
            mf_full[k * chunk + j] = m[n + k];
        }
}

/* Rows are split over OpenMP threads: built with -fopenmp, this library uses the libgomp that torch has
 * already loaded (the same soname), so its steps run on torch's own, already spinning, thread team. */
#define PARALLEL_MIN_NEURONS 4096

/* Forward of one row: c = F*c_prev + I*c_hat, h = o*tanh(c), with I = i_m - w + i*w, F = f_m - w + f*w,
 * w = i_m*f_m. a (acts) and tc may be NULL: inference keeps nothing for a backward pass. */
static void forward_row(int n, int chunk, int symmetric, const float *g, const float *cp, float *c, float *h,
                        float *m, float *p, float *a, float *tc, float *work) {
    const int H = n * chunk;
    const float *go = g + 2 * n, *gc = go + H, *gi = gc + H, *gf = gi + H;
    float *mi_full = work, *mf_full = work + H;
    softmax(g, p, n);
    softmax(g + n, p + n, n);
    master_gates(p, m, n, symmetric);
    expand(m, mi_full, mf_full, n, chunk);
    if (a) {  /* two copies of the loop: a store under a condition would not vectorize well */
#pragma omp simd
        for (int j = 0; j < H; j++) {
            float o = sigmoid(go[j]), c_hat = tanhf(gc[j]), i = sigmoid(gi[j]), f = sigmoid(gf[j]);
            float mi = mi_full[j], mf = mf_full[j], w = mi * mf;
            float c_new = (mf - w + f * w) * cp[j] + (mi - w + i * w) * c_hat, t = tanhf(c_new);
            c[j] = c_new;
            h[j] = o * t;
            a[j] = o;
            a[H + j] = c_hat;
            a[2 * H + j] = i;
            a[3 * H + j] = f;
            tc[j] = t;
        }
    } else {
#pragma omp simd
        for (int j = 0; j < H; j++) {
            float o = sigmoid(go[j]), c_hat = tanhf(gc[j]), i = sigmoid(gi[j]), f = sigmoid(gf[j]);
            float mi = mi_full[j], mf = mf_full[j], w = mi * mf;
            float c_new = (mf - w + f * w) * cp[j] + (mi - w + i * w) * c_hat;
            c[j] = c_new;
            h[j] = o * tanhf(c_new);
        }
    }
}

/* Backward of one row. dh: dL/dh_t (all of it); dc: dL/dc_t from later steps, overwritten with
 * dL/dc_{t-1}; writes dL/dgates into dg. */
static void backward_row(int n, int chunk, int symmetric, const float *dh, float *dc, const float *a,
                         const float *tc, const float *cp, const float *m, const float *p, float *dg, float *work) {
    const int H = n * chunk;
    float *mi_full = work, *mf_full = work + H, *dmi_full = work + 2 * H, *dmf_full = work + 3 * H;
    float *dm = work + 4 * H, *dp = dm + 2 * n;
    float *dgo = dg + 2 * n, *dgc = dgo + H, *dgi = dgc + H, *dgf = dgi + H;
    expand(m, mi_full, mf_full, n, chunk);
#pragma omp simd
    for (int j = 0; j < H; j++) {
        float o = a[j], c_hat = a[H + j], i = a[2 * H + j], f = a[3 * H + j], t = tc[j], d = dh[j];
        float mi = mi_full[j], mf = mf_full[j], w = mi * mf;
        float dcj = dc[j] + d * o * (1.0f - t * t);
        float d_in = dcj * c_hat, d_forget = dcj * cp[j];  /* dL/dI, dL/dF */
        float dw = d_in * (i - 1.0f) + d_forget * (f - 1.0f);
        dgo[j] = d * t * o * (1.0f - o);
        dgc[j] = dcj * (mi - w + i * w) * (1.0f - c_hat * c_hat);
        dgi[j] = d_in * w * i * (1.0f - i);
        dgf[j] = d_forget * w * f * (1.0f - f);
        dmi_full[j] = d_in + dw * mf;
        dmf_full[j] = d_forget + dw * mi;
        dc[j] = dcj * (mf - w + f * w);
    }
    for (int k = 0; k < n; k++) {  /* master gates are shared by a chunk: sum to level resolution */
        float si = 0.0f, sf = 0.0f;
        for (int j = 0; j < chunk; j++) {
            si += dmi_full[k * chunk + j];
            sf += dmf_full[k * chunk + j];
        }
        dm[k] = si;
        dm[n + k] = sf;
    }
    /* through the cumsums: the transposes of the triangular sums in master_gates */
    float run = 0.0f;
    for (int k = n - 1; k >= 0; k--) dp[n + k] = (run += dm[n + k]);
    run = 0.0f;
    if (symmetric) {
        for (int k = 0; k < n; k++) dp[k] = (run += dm[k]);
    } else {
        for (int k = n - 1; k >= 0; k--) dp[k] = -(run += dm[k]);
    }
    for (int half = 0; half < 2; half++) {  /* through the softmaxes */
        const float *ph = p + half * n, *dph = dp + half * n;
        float dot = 0.0f;
        for (int k = 0; k < n; k++) dot += ph[k] * dph[k];
        for (int k = 0; k < n; k++) dg[half * n + k] = ph[k] * (dph[k] - dot);
    }
}

/* One forward step for a batch; row b of gates starts at gates + b * stride. probs, acts and tanh_c may
 * be NULL. Returns 0, or -1 when out of memory. */
int onlstm_forward_step(int batch, int n, int chunk, int symmetric, const float *gates, long stride,
                        const float *c_prev, float *c_out, float *h_out, float *masters, float *probs,
                        float *acts, float *tanh_c) {
    const long H = (long)n * chunk;
    int failed = 0;
#pragma omp parallel if (batch > 1 && batch * H >= PARALLEL_MIN_NEURONS) reduction(| : failed)
    {
        float *work = malloc(sizeof(float) * (2 * H + 2 * n));
#pragma omp for schedule(static)
        for (int b = 0; b < batch; b++) {
            if (!work) {
                failed = 1;
                continue;
            }
            float *p = probs ? probs + b * 2 * n : work + 2 * H;
            forward_row(n, chunk, symmetric, gates + b * stride, c_prev + b * H, c_out + b * H, h_out + b * H,
                        masters + b * 2 * n, p, acts ? acts + b * 4 * H : NULL, tanh_c ? tanh_c + b * H : NULL, work);
        }
        free(work);
    }
    return failed ? -1 : 0;
}

/* The master gates alone, for `batch` rows of their 2n logits [m_i | m_f] (row b at logits + b * stride):
 * the top layer of a parse needs nothing else at a sentence's last word. Returns 0, or -1 when out of
 * memory. */
int onlstm_master_gates(int batch, int n, int symmetric, const float *logits, long stride, float *masters) {
    float *p = malloc(sizeof(float) * 2 * n);
    if (!p) return -1;
    for (int b = 0; b < batch; b++) {
        softmax(logits + b * stride, p, n);
        softmax(logits + b * stride + n, p + n, n);
        master_gates(p, masters + b * 2 * n, n, symmetric);
    }
    free(p);
    return 0;
}

/* One backward step for a batch (see backward_row); row b of d_gates starts at d_gates + b * stride.
 * Returns 0, or -1 when out of memory. */
int onlstm_backward_step(int batch, int n, int chunk, int symmetric, const float *dh, float *d_c,
                         const float *acts, const float *tanh_c, const float *c_prev, const float *masters,
                         const float *probs, float *d_gates, long stride) {
    const long H = (long)n * chunk;
    int failed = 0;
#pragma omp parallel if (batch > 1 && batch * H >= PARALLEL_MIN_NEURONS) reduction(| : failed)
    {
        float *work = malloc(sizeof(float) * (4 * H + 4 * n));
#pragma omp for schedule(static)
        for (int b = 0; b < batch; b++) {
            if (!work) {
                failed = 1;
                continue;
            }
            backward_row(n, chunk, symmetric, dh + b * H, d_c + b * H, acts + b * 4 * H, tanh_c + b * H,
                         c_prev + b * H, masters + b * 2 * n, probs + b * 2 * n, d_gates + b * stride, work);
        }
        free(work);
    }
    return failed ? -1 : 0;
}

/* A DropConnect mask of n floats: mask[k] = scale where the k-th 32-bit number of the stream `seed` is at
 * least `threshold` (so with probability 1 − threshold / 2^32), else 0. The numbers are SplitMix64 of a
 * counter, two per output, so the mask depends on the seed alone, not on the number of threads, and the
 * loop vectorizes; torch's uniform_ plus a comparison took four times as long. */
static inline unsigned long long splitmix64(unsigned long long z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

void onlstm_drop_mask(long n, unsigned long long seed, unsigned int threshold, float scale, float *mask) {
    const long pairs = n / 2;
#pragma omp parallel for schedule(static) if (n >= 65536)
    for (long k = 0; k < pairs; k++) {
        unsigned long long z = splitmix64(seed + (unsigned long long)k * 0x9E3779B97F4A7C15ULL);
        mask[2 * k] = (unsigned int)z >= threshold ? scale : 0.0f;
        mask[2 * k + 1] = (unsigned int)(z >> 32) >= threshold ? scale : 0.0f;
    }
    if (n % 2) {
        unsigned long long z = splitmix64(seed + (unsigned long long)pairs * 0x9E3779B97F4A7C15ULL);
        mask[n - 1] = (unsigned int)z >= threshold ? scale : 0.0f;
    }
}

/* Reductions over a long row in LANES independent partial results: without -ffast-math the compiler may
 * not reorder one running float sum or maximum, so a single accumulator would not vectorize. */
#define LANES 16

static float row_max(const float *x, long V) {
    float top[LANES];
    for (int j = 0; j < LANES; j++) top[j] = x[0];
    long v = 0;
    for (; v + LANES <= V; v += LANES)
        for (int j = 0; j < LANES; j++) top[j] = x[v + j] > top[j] ? x[v + j] : top[j];
    float best = top[0];
    for (int j = 1; j < LANES; j++) best = top[j] > best ? top[j] : best;
    for (; v < V; v++) best = x[v] > best ? x[v] : best;
    return best;
}

/* Σ exp(x − top), also writing each term to e[] unless e is NULL. */
static float row_exp_sum(const float *x, float top, float *e, long V) {
    float part[LANES] = {0.0f};
    long v = 0;
    for (; v + LANES <= V; v += LANES)
        for (int j = 0; j < LANES; j++) {
            const float term = expf(x[v + j] - top);
            if (e) e[v + j] = term;
            part[j] += term;
        }
    float total = 0.0f;
    for (int j = 0; j < LANES; j++) total += part[j];
    for (; v < V; v++) {
        const float term = expf(x[v] - top);
        if (e) e[v] = term;
        total += term;
    }
    return total;
}

/* The tied decoder's softmax cross-entropy for `rows` rows of V logits (row r at logits + r * V):
 * loss[r] = logsumexp(x) − x[target], and, where d_logits is not NULL, its gradient softmax(x) − onehot
 * written to d_logits (which may be `logits` itself). One pass per row while it is in cache, where
 * log_softmax, nll_loss and their backward pass over the whole (rows × V) matrix five times. */
void onlstm_softmax_xent(long rows, long V, const float *logits, const long *targets, float *loss,
                         float *d_logits) {
#pragma omp parallel for schedule(static) if (rows * V >= 65536)
    for (long r = 0; r < rows; r++) {
        const float *x = logits + r * V;
        const float top = row_max(x, V), at_target = x[targets[r]];
        float *d = d_logits ? d_logits + r * V : NULL;
        const float total = row_exp_sum(x, top, d, V);
        loss[r] = logf(total) + top - at_target;
        if (d) {
            const float scale = 1.0f / total;
            for (long v = 0; v < V; v++) d[v] *= scale;
            d[targets[r]] -= 1.0f;
        }
    }
}

/* The self-trained span parser's tree of one sentence (span_parser.py), scoring and CKY in one pass.
 *
 * g holds the n + 1 fenceposts' first-layer activations (row k at g + k * width); the span of words
 * i+1 … j scores w · relu(g_j − g_i + bias) + out_bias, and the tree with the largest sum of its spans'
 * scores is found exactly. Only the (n + 1)² best sums and split points are kept, never a (n, n, width)
 * tensor. heights[k] gets the length of the span that splits before word k (0 for the first word), which
 * the symmetric split rule turns back into this tree. Returns 0, or −1 when memory runs out. */
static float span_score(const float *gi, const float *gj_bias, const float *w, int width) {
    float total = 0.0f;
#pragma omp simd reduction(+ : total)
    for (int k = 0; k < width; k++) {
        const float x = gj_bias[k] - gi[k];
        total += w[k] * (x > 0.0f ? x : 0.0f);
    }
    return total;
}

int onlstm_span_tree(int n, int width, const float *g, const float *bias, const float *w, float out_bias,
                     int *heights) {
    const long size = (long)n + 1;
    float *best = calloc(size * size, sizeof(float));
    int *split = malloc(size * size * sizeof(int));
    float *shifted = malloc(size * width * sizeof(float));  /* g_j + bias, once per fencepost */
    int *stack = malloc(4 * size * sizeof(int));
    if (!best || !split || !shifted || !stack) {
        free(best); free(split); free(shifted); free(stack);
        return -1;
    }
    for (long j = 0; j < size; j++)
        for (int k = 0; k < width; k++) shifted[j * width + k] = g[j * width + k] + bias[k];
    for (int length = 2; length <= n; length++)
        for (int i = 0; i + length <= n; i++) {
            const int j = i + length;
            int at = i + 1;
            float top = best[i * size + at] + best[at * size + j];
            for (int k = i + 2; k < j; k++) {
                const float total = best[i * size + k] + best[k * size + j];
                if (total > top) top = total, at = k;
            }
            best[i * size + j] = top + span_score(g + i * width, shifted + j * width, w, width) + out_bias;
            split[i * size + j] = at;
        }
    for (int k = 0; k < n; k++) heights[k] = 0;
    int depth = 0;
    stack[depth++] = 0, stack[depth++] = n;
    while (depth) {
        const int j = stack[--depth], i = stack[--depth];
        if (j - i < 2) continue;
        const int k = split[i * size + j];
        heights[k] = j - i;
        stack[depth++] = i, stack[depth++] = k;
        stack[depth++] = k, stack[depth++] = j;
    }
    free(best); free(split); free(shifted); free(stack);
    return 0;
}
