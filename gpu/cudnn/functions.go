package cudnn

import "github.com/gmlake/gmlake/internal/dl"

// The enum values below are cuDNN's; the header named with each group defines them (cudnn_ops.h
// and cudnn_cnn.h in cuDNN 9, cudnn_ops_infer.h and cudnn_cnn_infer.h in cuDNN 8, same values).
const (
	statusSuccess = 0 // cudnnStatus_t CUDNN_STATUS_SUCCESS (cudnn_graph.h in 9, cudnn_ops_infer.h in 8)

	formatNCHW = 0 // cudnnTensorFormat_t CUDNN_TENSOR_NCHW (cudnn_graph.h / cudnn_ops_infer.h)
	dataFloat  = 0 // cudnnDataType_t CUDNN_DATA_FLOAT (cudnn_graph.h / cudnn_ops_infer.h)

	crossCorrelation = 1 // cudnnConvolutionMode_t CUDNN_CROSS_CORRELATION (cudnn_cnn.h / cudnn_cnn_infer.h)

	batchNormSpatial = 1 // cudnnBatchNormMode_t CUDNN_BATCHNORM_SPATIAL (cudnn_ops.h / cudnn_ops_infer.h)

	poolingMax            = 0 // cudnnPoolingMode_t CUDNN_POOLING_MAX (cudnn_ops.h / cudnn_ops_infer.h)
	poolingAvgIncludePads = 1 // CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING

	notPropagateNaN = 0 // cudnnNanPropagation_t CUDNN_NOT_PROPAGATE_NAN (cudnn_graph.h / cudnn_ops_infer.h)

	activationReLU = 1 // cudnnActivationMode_t CUDNN_ACTIVATION_RELU (cudnn_ops.h / cudnn_ops_infer.h)
)

// MathType is cudnnMathType_t (cudnn_graph.h in 9, cudnn_ops_infer.h in 8): whether float32
// convolutions may use tensor cores, which round their inputs to TF32.
type MathType int32

// The math types.
const (
	DefaultMath  MathType = 0 // CUDNN_DEFAULT_MATH: TF32 tensor cores allowed on Ampere and later
	TensorOpMath MathType = 1 // CUDNN_TENSOR_OP_MATH
	FMAMath      MathType = 3 // CUDNN_FMA_MATH: no tensor cores, full float32 (cuDNN 8.1 and later)
)

// algoPerf is cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionBwdDataAlgoPerf_t and
// cudnnConvolutionBwdFilterAlgoPerf_t (cudnn_cnn.h / cudnn_cnn_infer.h, cudnn_cnn_train.h), which
// share one layout: algo, status, time (ms), memory (size_t), determinism, mathType, reserved[3].
type algoPerf struct {
	Algo        int32
	Status      int32
	Time        float32
	_           int32 // padding before the size_t
	Memory      uintptr
	Determinism int32
	MathType    int32
	Reserved    [3]int32
	_           int32 // trailing padding to the struct's 8-byte alignment
}

// functions are the cuDNN entry points, bound by purego. Handles and descriptors are opaque
// pointers (uintptr); alpha and beta scaling factors are pointers to host float32s.
type functions struct {
	getVersion     func() uintptr
	getErrorString func(status int32) string

	create    func(h *uintptr) int32
	destroy   func(h uintptr) int32
	setStream func(h, stream uintptr) int32

	createTensorDescriptor  func(d *uintptr) int32
	setTensor4dDescriptor   func(d uintptr, format, dtype, n, c, h, w int32) int32
	destroyTensorDescriptor func(d uintptr) int32

	createFilterDescriptor  func(d *uintptr) int32
	setFilter4dDescriptor   func(d uintptr, dtype, format, k, c, h, w int32) int32
	destroyFilterDescriptor func(d uintptr) int32

	createConvolutionDescriptor  func(d *uintptr) int32
	setConvolution2dDescriptor   func(d uintptr, padH, padW, strideH, strideW, dilH, dilW, mode, computeType int32) int32
	setConvolutionMathType       func(d uintptr, math int32) int32
	destroyConvolutionDescriptor func(d uintptr) int32

	getForwardAlgorithm        func(h, xDesc, wDesc, convDesc, yDesc uintptr, requested int32, returned *int32, perf *algoPerf) int32
	getBackwardDataAlgorithm   func(h, wDesc, dyDesc, convDesc, dxDesc uintptr, requested int32, returned *int32, perf *algoPerf) int32
	getBackwardFilterAlgorithm func(h, xDesc, dyDesc, convDesc, dwDesc uintptr, requested int32, returned *int32, perf *algoPerf) int32

	getForwardWorkspaceSize        func(h, xDesc, wDesc, convDesc, yDesc uintptr, algo int32, size *uintptr) int32
	getBackwardDataWorkspaceSize   func(h, wDesc, dyDesc, convDesc, dxDesc uintptr, algo int32, size *uintptr) int32
	getBackwardFilterWorkspaceSize func(h, xDesc, dyDesc, convDesc, dwDesc uintptr, algo int32, size *uintptr) int32

	convolutionForward func(h uintptr, alpha *float32, xDesc, x, wDesc, w, convDesc uintptr, algo int32,
		ws, wsSize uintptr, beta *float32, yDesc, y uintptr) int32
	convolutionBackwardData func(h uintptr, alpha *float32, wDesc, w, dyDesc, dy, convDesc uintptr, algo int32,
		ws, wsSize uintptr, beta *float32, dxDesc, dx uintptr) int32
	convolutionBackwardFilter func(h uintptr, alpha *float32, xDesc, x, dyDesc, dy, convDesc uintptr, algo int32,
		ws, wsSize uintptr, beta *float32, dwDesc, dw uintptr) int32
	convolutionBackwardBias func(h uintptr, alpha *float32, dyDesc, dy uintptr, beta *float32, dbDesc, db uintptr) int32

	deriveBNTensorDescriptor func(derived, xDesc uintptr, mode int32) int32
	batchNormForwardTraining func(h uintptr, mode int32, alpha, beta *float32, xDesc, x, yDesc, y, bnDesc, scale,
		bias uintptr, expAvgFactor float64, runMean, runVar uintptr, eps float64, saveMean, saveInvVar uintptr) int32

	createPoolingDescriptor  func(d *uintptr) int32
	setPooling2dDescriptor   func(d uintptr, mode, nan, wH, wW, padH, padW, strideH, strideW int32) int32
	destroyPoolingDescriptor func(d uintptr) int32
	poolingForward           func(h, d uintptr, alpha *float32, xDesc, x uintptr, beta *float32, yDesc, y uintptr) int32
	poolingBackward          func(h, d uintptr, alpha *float32, yDesc, y, dyDesc, dy, xDesc, x uintptr, beta *float32,
		dxDesc, dx uintptr) int32

	createActivationDescriptor  func(d *uintptr) int32
	setActivationDescriptor     func(d uintptr, mode, nan int32, coef float64) int32
	destroyActivationDescriptor func(d uintptr) int32
	activationForward           func(h, d uintptr, alpha *float32, xDesc, x uintptr, beta *float32, yDesc, y uintptr) int32
	activationBackward          func(h, d uintptr, alpha *float32, yDesc, y, dyDesc, dy, xDesc, x uintptr, beta *float32,
		dxDesc, dx uintptr) int32

	addTensor func(h uintptr, alpha *float32, aDesc, a uintptr, beta *float32, cDesc, c uintptr) int32
}

// resolve binds every function from lib (dl.Library.Func: purego's conversions, which pass the
// float64 arguments of batch norm and the activation descriptor in floating-point registers).
func (f *functions) resolve(lib *dl.Library) error {
	for _, e := range []struct {
		name string
		fn   any
	}{
		{"cudnnGetVersion", &f.getVersion},
		{"cudnnGetErrorString", &f.getErrorString},
		{"cudnnCreate", &f.create},
		{"cudnnDestroy", &f.destroy},
		{"cudnnSetStream", &f.setStream},
		{"cudnnCreateTensorDescriptor", &f.createTensorDescriptor},
		{"cudnnSetTensor4dDescriptor", &f.setTensor4dDescriptor},
		{"cudnnDestroyTensorDescriptor", &f.destroyTensorDescriptor},
		{"cudnnCreateFilterDescriptor", &f.createFilterDescriptor},
		{"cudnnSetFilter4dDescriptor", &f.setFilter4dDescriptor},
		{"cudnnDestroyFilterDescriptor", &f.destroyFilterDescriptor},
		{"cudnnCreateConvolutionDescriptor", &f.createConvolutionDescriptor},
		{"cudnnSetConvolution2dDescriptor", &f.setConvolution2dDescriptor},
		{"cudnnSetConvolutionMathType", &f.setConvolutionMathType},
		{"cudnnDestroyConvolutionDescriptor", &f.destroyConvolutionDescriptor},
		{"cudnnGetConvolutionForwardAlgorithm_v7", &f.getForwardAlgorithm},
		{"cudnnGetConvolutionBackwardDataAlgorithm_v7", &f.getBackwardDataAlgorithm},
		{"cudnnGetConvolutionBackwardFilterAlgorithm_v7", &f.getBackwardFilterAlgorithm},
		{"cudnnGetConvolutionForwardWorkspaceSize", &f.getForwardWorkspaceSize},
		{"cudnnGetConvolutionBackwardDataWorkspaceSize", &f.getBackwardDataWorkspaceSize},
		{"cudnnGetConvolutionBackwardFilterWorkspaceSize", &f.getBackwardFilterWorkspaceSize},
		{"cudnnConvolutionForward", &f.convolutionForward},
		{"cudnnConvolutionBackwardData", &f.convolutionBackwardData},
		{"cudnnConvolutionBackwardFilter", &f.convolutionBackwardFilter},
		{"cudnnConvolutionBackwardBias", &f.convolutionBackwardBias},
		{"cudnnDeriveBNTensorDescriptor", &f.deriveBNTensorDescriptor},
		{"cudnnBatchNormalizationForwardTraining", &f.batchNormForwardTraining},
		{"cudnnCreatePoolingDescriptor", &f.createPoolingDescriptor},
		{"cudnnSetPooling2dDescriptor", &f.setPooling2dDescriptor},
		{"cudnnDestroyPoolingDescriptor", &f.destroyPoolingDescriptor},
		{"cudnnPoolingForward", &f.poolingForward},
		{"cudnnPoolingBackward", &f.poolingBackward},
		{"cudnnCreateActivationDescriptor", &f.createActivationDescriptor},
		{"cudnnSetActivationDescriptor", &f.setActivationDescriptor},
		{"cudnnDestroyActivationDescriptor", &f.destroyActivationDescriptor},
		{"cudnnActivationForward", &f.activationForward},
		{"cudnnActivationBackward", &f.activationBackward},
		{"cudnnAddTensor", &f.addTensor},
	} {
		if err := lib.Func(e.name, e.fn); err != nil {
			return err
		}
	}
	return nil
}
