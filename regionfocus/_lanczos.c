/* Lanczos resampling of packed RGB images that gives Pillow's result byte for byte, in a
 * fraction of its CPU time.
 *
 * Why: a RegionFocus round at a 4K model size resamples four views to ~3836x2156, ~0.13 s of
 * CPU each in Pillow (Resample.c runs one scalar loop per output pixel and channel). The
 * model must see exactly today's pixels, so this file does the same arithmetic -- the same
 * double-precision filter weights rounded to the same 22-bit fixed point, the same int32 sums
 * and the same clipping, horizontal pass first -- laid out so the compiler can vectorise it:
 * the vertical pass runs along whole rows, the horizontal pass over blocks of rows transposed
 * so that the rows sit side by side.
 *
 * The facts mirrored (Pillow, src/libImaging/Resample.c, precompute_coeffs,
 * normalize_coeffs_8bpc, ImagingResampleInner): support 3 scaled by max(1, in/out); weights
 * lanczos((x + xmin - center + 0.5) / filterscale) normalised by their sum; fixed point
 * (int)(w * 2^22 +- 0.5); accumulators start at 2^21; result (sum >> 22) clipped to 0..255;
 * the horizontal pass covers only the rows the vertical pass reads. Pillow 13 runs the
 * vertical pass first when the height shrinks by more than twice what the width does; the
 * Python side (regionfocus/resample.py) sends only the other cases here, so every Pillow
 * version agrees.
 *
 * Built with -ffp-contract=off: a fused multiply-add would round the weights differently from
 * Pillow's build.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifndef M_PI /* MSVC without _USE_MATH_DEFINES; the same double as math.h's */
#define M_PI 3.14159265358979323846
#endif

#define PRECISION_BITS 22
#define BLOCK 16 /* rows transposed together in the horizontal pass */
/* The longest side resampled: far beyond any screen (16K is 15360), and small enough that every
 * per-side count (filter taps, bounds) stays well inside an int. */
#define MAX_SIDE (1 << 20)

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define VECTOR_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define VECTOR_CLONES
#endif

static double
sinc(double x) {
    if (x == 0.0) {
        return 1.0;
    }
    x = x * M_PI;
    return sin(x) / x;
}

static double
lanczos3(double x) {
    if (-3.0 <= x && x < 3.0) {
        return sinc(x) * sinc(x / 3);
    }
    return 0.0;
}

typedef struct {
    int ksize;      /* weights per output pixel (some trailing ones are zero) */
    int *bounds;    /* per output pixel: first input index, number of inputs */
    int32_t *kk;    /* per output pixel: ksize fixed-point weights */
} Weights;

static void
weights_free(Weights *w) {
    free(w->bounds);
    free(w->kk);
    w->bounds = NULL;
    w->kk = NULL;
}

/* Weights mapping in_size input pixels onto out_size output pixels. 0 on success. */
static int
weights_make(int in_size, int out_size, Weights *w) {
    /* The box edges are floats in Pillow; whole-pixel sizes below 2^24 are exact. */
    float in0 = 0.0f, in1 = (float)in_size;
    double scale = (double)(in1 - in0) / out_size;
    double filterscale = scale < 1.0 ? 1.0 : scale;
    double support = 3.0 * filterscale;
    double inv_filterscale = 1.0 / filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    /* sides are at most MAX_SIDE (checked on entry), so ksize fits an int; the product with
     * out_size may still exceed a 32-bit size_t */
    if ((size_t)out_size > SIZE_MAX / sizeof(int32_t) / (size_t)ksize) {
        return -1;
    }
    double *k = malloc(sizeof(double) * (size_t)ksize);
    w->ksize = ksize;
    w->bounds = malloc(sizeof(int) * 2 * (size_t)out_size);
    w->kk = calloc((size_t)out_size * (size_t)ksize, sizeof(int32_t));
    if (!k || !w->bounds || !w->kk) {
        free(k);
        weights_free(w);
        return -1;
    }
    for (int xx = 0; xx < out_size; xx++) {
        double center = in0 + (xx + 0.5) * scale;
        double ww = 0.0;
        int xmin = (int)(center - support + 0.5);
        int xmax = (int)(center + support + 0.5);
        if (xmin < 0) {
            xmin = 0;
        }
        if (xmax > in_size) {
            xmax = in_size;
        }
        xmax -= xmin;
        for (int x = 0; x < xmax; x++) {
            double v = lanczos3((x + xmin - center + 0.5) * inv_filterscale);
            k[x] = v;
            ww += v;
        }
        if (ww != 0.0) {
            for (int x = 0; x < xmax; x++) {
                k[x] /= ww;
            }
        }
        for (int x = 0; x < xmax; x++) {
            double f = k[x] * (1 << PRECISION_BITS);
            w->kk[(size_t)xx * ksize + x] = k[x] < 0 ? (int32_t)(-0.5 + f) : (int32_t)(0.5 + f);
        }
        w->bounds[2 * xx] = xmin;
        w->bounds[2 * xx + 1] = xmax;
    }
    free(k);
    return 0;
}

static inline uint8_t
clip8(int32_t v) {
    v >>= PRECISION_BITS;
    return v < 0 ? 0 : (v > 255 ? 255 : (uint8_t)v);
}

#if defined(__SSE2__)
#include <emmintrin.h>
/* A 16x16 block of bytes transposed: row i of src (src_stride apart) becomes column i of dst
 * (rows dst_stride apart). Four rounds of interleaving vector i with vector i + 8 do it. */
static inline void
transpose16(const uint8_t *src, size_t src_stride, uint8_t *dst, size_t dst_stride) {
    __m128i x[16], y[16];
    for (int i = 0; i < 16; i++) {
        x[i] = _mm_loadu_si128((const __m128i *)(src + i * src_stride));
    }
    for (int round = 0; round < 4; round++) {
        for (int i = 0; i < 8; i++) {
            y[2 * i] = _mm_unpacklo_epi8(x[i], x[i + 8]);
            y[2 * i + 1] = _mm_unpackhi_epi8(x[i], x[i + 8]);
        }
        memcpy(x, y, sizeof(x));
    }
    for (int i = 0; i < 16; i++) {
        _mm_storeu_si128((__m128i *)(dst + i * dst_stride), x[i]);
    }
}
#endif

/* BLOCK rows of len bytes (stride apart) -> t[i * BLOCK + r]: the rows side by side. */
static void
to_columns(const uint8_t *rows, size_t stride, int len, uint8_t *t) {
    int i = 0;
#if defined(__SSE2__) && BLOCK == 16
    for (; i + 16 <= len; i += 16) {
        transpose16(rows + i, stride, t + (size_t)i * BLOCK, BLOCK);
    }
#endif
    for (; i < len; i++) {
        for (int r = 0; r < BLOCK; r++) {
            t[(size_t)i * BLOCK + r] = rows[r * stride + i];
        }
    }
}

/* t[i * BLOCK + r] -> BLOCK rows of len bytes (stride apart): back to rows. */
static void
to_rows(const uint8_t *t, int len, uint8_t *rows, size_t stride) {
    int i = 0;
#if defined(__SSE2__) && BLOCK == 16
    for (; i + 16 <= len; i += 16) {
        transpose16(t + (size_t)i * BLOCK, BLOCK, rows + i, stride);
    }
#endif
    for (; i < len; i++) {
        for (int r = 0; r < BLOCK; r++) {
            rows[r * stride + i] = t[(size_t)i * BLOCK + r];
        }
    }
}

/* rows x w_in RGB -> rows x w_out RGB. Scratch: tb of w_in * 3 * BLOCK bytes, ot of
 * w_out * 3 * BLOCK bytes, pad of BLOCK * 3 * max(w_in, w_out) bytes. BLOCK rows are turned into columns, so that one output pixel's taps read
 * BLOCK x 3 contiguous bytes for every tap, and the results are turned back into rows. The
 * last, short block goes through a padded copy. */
VECTOR_CLONES static void
pass_horizontal(
    const uint8_t *src,
    int w_in,
    int rows,
    uint8_t *dst,
    int w_out,
    const Weights *w,
    uint8_t *tb,
    uint8_t *ot,
    uint8_t *pad
) {
    const int32_t half = 1 << (PRECISION_BITS - 1);
    const size_t in_stride = (size_t)w_in * 3, out_stride = (size_t)w_out * 3;
    int32_t acc[3 * BLOCK];
    for (int y0 = 0; y0 < rows; y0 += BLOCK) {
        int n = rows - y0 < BLOCK ? rows - y0 : BLOCK;
        if (n < BLOCK) {
            memset(pad, 0, BLOCK * in_stride);
            memcpy(pad, src + (size_t)y0 * in_stride, (size_t)n * in_stride);
            to_columns(pad, in_stride, (int)in_stride, tb);
        } else {
            to_columns(src + (size_t)y0 * in_stride, in_stride, (int)in_stride, tb);
        }
        for (int xx = 0; xx < w_out; xx++) {
            int xmin = w->bounds[2 * xx], xmax = w->bounds[2 * xx + 1];
            const int32_t *k = w->kk + (size_t)xx * w->ksize;
            for (int i = 0; i < 3 * BLOCK; i++) {
                acc[i] = half;
            }
            for (int t = 0; t < xmax; t++) {
                const uint8_t *p = tb + (size_t)(xmin + t) * 3 * BLOCK;
                int32_t kt = k[t];
                for (int i = 0; i < 3 * BLOCK; i++) {
                    acc[i] += p[i] * kt;
                }
            }
            uint8_t *o = ot + (size_t)xx * 3 * BLOCK;
            for (int i = 0; i < 3 * BLOCK; i++) {
                o[i] = clip8(acc[i]);
            }
        }
        if (n < BLOCK) {
            to_rows(ot, (int)out_stride, pad, out_stride);
            memcpy(dst + (size_t)y0 * out_stride, pad, (size_t)n * out_stride);
        } else {
            to_rows(ot, (int)out_stride, dst + (size_t)y0 * out_stride, out_stride);
        }
    }
}

/* Rows of w3 bytes -> h_out rows; w->bounds index rows of src. acc: w3 int32 of scratch. */
VECTOR_CLONES static void
pass_vertical(const uint8_t *src, int w3, uint8_t *dst, int h_out, const Weights *w, int32_t *acc) {
    const int32_t half = 1 << (PRECISION_BITS - 1);
    for (int yy = 0; yy < h_out; yy++) {
        int ymin = w->bounds[2 * yy], ymax = w->bounds[2 * yy + 1];
        const int32_t *k = w->kk + (size_t)yy * w->ksize;
        for (int i = 0; i < w3; i++) {
            acc[i] = half;
        }
        for (int t = 0; t < ymax; t++) {
            const uint8_t *row = src + (size_t)(ymin + t) * w3;
            int32_t kt = k[t];
            for (int i = 0; i < w3; i++) {
                acc[i] += row[i] * kt;
            }
        }
        uint8_t *o = dst + (size_t)yy * w3;
        for (int i = 0; i < w3; i++) {
            o[i] = clip8(acc[i]);
        }
    }
}

/* Whether a x b RGB pixels (3 bytes each) can be counted in a Py_ssize_t (and so in a size_t):
 * checked before any product is formed, since on 64-bit two int sides near 2^31 overflow it
 * into a negative length, and on 32-bit builds far smaller sides wrap a malloc size. */
static int
rgb_fits(int a, int b) {
    return (size_t)a <= (size_t)PY_SSIZE_T_MAX / 3 / (size_t)b;
}

/* 0 on success, -1 when out of memory. */
static int
resample(const uint8_t *src, int w, int h, uint8_t *dst, int ow, int oh) {
    Weights wv = {0}, wh = {0};
    uint8_t *tmp = NULL, *tb = NULL, *ot = NULL, *pad = NULL;
    int32_t *acc = NULL;
    int status = -1;
    int need_h = ow != w, need_v = oh != h;

    if (weights_make(h, oh, &wv) != 0) {
        goto done;
    }
    const uint8_t *rows = src;
    if (need_h) {
        int first = wv.bounds[0];
        int last = wv.bounds[2 * oh - 2] + wv.bounds[2 * oh - 1];
        if (weights_make(w, ow, &wh) != 0) {
            goto done;
        }
        for (int i = 0; i < oh; i++) {
            wv.bounds[2 * i] -= first;
        }
        if (!rgb_fits(last - first, ow)) {
            goto done;
        }
        uint8_t *target = need_v ? (tmp = malloc((size_t)(last - first) * ow * 3)) : dst;
        tb = malloc((size_t)w * 3 * BLOCK);
        ot = malloc((size_t)ow * 3 * BLOCK);
        pad = malloc((size_t)BLOCK * 3 * (w > ow ? w : ow));
        if (!target || !tb || !ot || !pad) {
            goto done;
        }
        pass_horizontal(src + (size_t)first * w * 3, w, last - first, target, ow, &wh, tb, ot, pad);
        rows = target;
    }
    if (need_v) {
        acc = malloc(sizeof(int32_t) * (size_t)ow * 3);
        if (!acc) {
            goto done;
        }
        pass_vertical(rows, ow * 3, dst, oh, &wv, acc);
    } else if (!need_h) {
        memcpy(dst, src, (size_t)w * h * 3);
    }
    status = 0;
done:
    free(acc);
    free(pad);
    free(ot);
    free(tb);
    free(tmp);
    weights_free(&wv);
    weights_free(&wh);
    return status;
}

static PyObject *
resample_rgb(PyObject *self, PyObject *args) {
    Py_buffer in;
    int w, h, ow, oh;
    if (!PyArg_ParseTuple(args, "y*iiii", &in, &w, &h, &ow, &oh)) {
        return NULL;
    }
    if (w < 1 || h < 1 || ow < 1 || oh < 1) {
        PyBuffer_Release(&in);
        return PyErr_Format(PyExc_ValueError, "resample_rgb: sizes must be positive, got %dx%d -> %dx%d", w, h, ow, oh);
    }
    if (w > MAX_SIDE || h > MAX_SIDE || ow > MAX_SIDE || oh > MAX_SIDE || !rgb_fits(w, h) || !rgb_fits(ow, oh)) {
        PyBuffer_Release(&in);
        return PyErr_Format(
            PyExc_ValueError,
            "resample_rgb: %dx%d -> %dx%d is too large (sides up to %d px, and width x height x 3 "
            "within %zd bytes)",
            w, h, ow, oh, MAX_SIDE, PY_SSIZE_T_MAX
        );
    }
    if (in.len != (Py_ssize_t)w * h * 3) {
        Py_ssize_t got = in.len;
        PyBuffer_Release(&in);
        return PyErr_Format(
            PyExc_ValueError, "resample_rgb: a %dx%d RGB image has %zd bytes, got %zd", w, h, (Py_ssize_t)w * h * 3, got
        );
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)ow * oh * 3);
    if (!out) {
        PyBuffer_Release(&in);
        return NULL;
    }
    int status;
    Py_BEGIN_ALLOW_THREADS
    status = resample((const uint8_t *)in.buf, w, h, (uint8_t *)PyBytes_AS_STRING(out), ow, oh);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&in);
    if (status != 0) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    return out;
}

static PyMethodDef methods[] = {
    {"resample_rgb",
     resample_rgb,
     METH_VARARGS,
     "resample_rgb(data, width, height, out_width, out_height) -> bytes\n\n"
     "Packed RGB rows resampled with Pillow's Lanczos, horizontal pass first. The GIL is released."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_lanczos", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__lanczos(void) {
    return PyModule_Create(&module);
}
