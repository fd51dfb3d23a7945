package train

import (
	"fmt"
	"math/rand"
)

// ImageBatch is a batch of N images of C channels and H×W pixels (row-major NCHW) with one class
// label each.
type ImageBatch struct {
	Images     []float32
	Labels     []int
	N, C, H, W int
}

// ColorTask is the synthetic classification task of the image trainer: every class has a mean
// color (one value per channel, drawn from N(0, Contrast²) by the class's seed), and an image of
// a class is that color plus unit Gaussian noise on every pixel. A network learns it through its
// global average pool, at any image size, so it exercises multi-scale training; the larger the
// image, the less noise survives the pooling.
type ColorTask struct {
	Classes, Channels int
	Contrast          float64
	Seed              int64
}

// DefaultColorTask has 10 classes of RGB images.
var DefaultColorTask = ColorTask{Classes: 10, Channels: 3, Contrast: 1, Seed: 1}

// Batch draws n images of h×w pixels.
func (c ColorTask) Batch(rng *rand.Rand, n, h, w int) (ImageBatch, error) {
	if c.Classes <= 0 || c.Channels <= 0 || n <= 0 || h <= 0 || w <= 0 {
		return ImageBatch{}, fmt.Errorf("%w: %d images of %d×%d for %+v", ErrBatch, n, h, w, c)
	}
	colors := c.colors()
	b := ImageBatch{Images: make([]float32, n*c.Channels*h*w), Labels: make([]int, n), N: n, C: c.Channels, H: h, W: w}
	plane := h * w
	for i := range n {
		k := rng.Intn(c.Classes)
		b.Labels[i] = k
		for ch := range c.Channels {
			px := b.Images[(i*c.Channels+ch)*plane : (i*c.Channels+ch+1)*plane]
			for j := range px {
				px[j] = float32(colors[k*c.Channels+ch] + rng.NormFloat64())
			}
		}
	}
	return b, nil
}

func (c ColorTask) colors() []float64 {
	rng := rand.New(rand.NewSource(c.Seed))
	out := make([]float64, c.Classes*c.Channels)
	for i := range out {
		out[i] = rng.NormFloat64() * c.Contrast
	}
	return out
}

// Scales is the set of square image sizes of multi-scale training: every step draws one, so
// shapes change from step to step as in detection and segmentation training.
type Scales []int

// Pick draws the next step's image size.
func (s Scales) Pick(rng *rand.Rand) int { return s[rng.Intn(len(s))] }
