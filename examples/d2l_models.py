#!/usr/bin/python3
"""The networks of the "Modern Convolutional Neural Networks" chapter of
"Dive into Deep Learning" (d2l.ai, the PyTorch code of its current edition,
chapter 8), built as d2l builds them, so that their state_dict() keys are
the tensor names of the clnet model files in examples/models:

    alexnet     8.1  AlexNet, 1x224x224                    alexnet.cfg
    vgg         8.2  VGG-11 at a quarter of its channels    vgg.cfg
                     (d2l's arch=((1, 16), (1, 32), (2, 64), (2, 128), (2, 128))), 1x224x224
    nin         8.3  NiN, 1x224x224                        nin.cfg
    googlenet   8.4  GoogLeNet, 1x96x96                    googlenet.cfg
    bn_lenet    8.5  LeNet with batch norm, 1x28x28        bn_lenet.cfg
    resnext18   8.6  ResNet-18's layout with d2l's ResNeXtBlock(channels, 16, 1), 1x96x96
                                                           resnext18.cfg
    densenet    8.7  DenseNet, 1x96x96                     densenet.cfg
    regnetx32   8.8  RegNetX-32 (d2l's AnyNet), 1x96x96    regnetx32.cfg

d2l's classes keep their layers in `self.net`, so every key starts with
"net." (net.0.weight, net.b2.0.conv1.weight, ...); d2l's Lazy layers are
written here with their input sizes, which changes nothing in the tensors.
Each model is a D2LNet (an nn.Module with .net and .input_shape) initialised
with d2l.init_cnn (Xavier-uniform weights for convolutions and linear
layers; PyTorch's defaults for the rest).

examples/load_checkpoint.py --model NAME loads clnet checkpoints of these
models and writes PyTorch state dicts as clnet checkpoints; the suite
(tests/d2l_models_test.sh) compares clnet's logits and one training step
with PyTorch's from the same weights. Needs torch (Debian: python3-torch).
"""
import torch
from torch import nn
from torch.nn import functional as F


class D2LNet(nn.Module):
    """A d2l classifier's network: self.net, and the input it is built for."""

    def __init__(self, net, size):
        super().__init__()
        self.net = net
        self.input_shape = (1, size, size)
        self.net.apply(init_cnn)

    def forward(self, x):
        return self.net(x)


def init_cnn(module):
    """d2l.init_cnn."""
    if type(module) in (nn.Linear, nn.Conv2d):
        nn.init.xavier_uniform_(module.weight)


def alexnet(num_classes=10):
    return D2LNet(nn.Sequential(
        nn.Conv2d(1, 96, kernel_size=11, stride=4, padding=1), nn.ReLU(),
        nn.MaxPool2d(kernel_size=3, stride=2),
        nn.Conv2d(96, 256, kernel_size=5, padding=2), nn.ReLU(),
        nn.MaxPool2d(kernel_size=3, stride=2),
        nn.Conv2d(256, 384, kernel_size=3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 384, kernel_size=3, padding=1), nn.ReLU(),
        nn.Conv2d(384, 256, kernel_size=3, padding=1), nn.ReLU(),
        nn.MaxPool2d(kernel_size=3, stride=2), nn.Flatten(),
        nn.Linear(6400, 4096), nn.ReLU(), nn.Dropout(p=0.5),
        nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(p=0.5),
        nn.Linear(4096, num_classes)), 224)


def vgg_block(num_convs, in_channels, out_channels):
    layers = []
    for _ in range(num_convs):
        layers += [nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1), nn.ReLU()]
        in_channels = out_channels
    return nn.Sequential(*layers, nn.MaxPool2d(kernel_size=2, stride=2))


def vgg(arch=((1, 16), (1, 32), (2, 64), (2, 128), (2, 128)), num_classes=10):
    blocks, channels = [], 1
    for num_convs, out_channels in arch:
        blocks.append(vgg_block(num_convs, channels, out_channels))
        channels = out_channels
    return D2LNet(nn.Sequential(
        *blocks, nn.Flatten(),
        nn.Linear(channels * 7 * 7, 4096), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(4096, 4096), nn.ReLU(), nn.Dropout(0.5),
        nn.Linear(4096, num_classes)), 224)


def nin_block(in_channels, out_channels, kernel_size, strides, padding):
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, kernel_size, strides, padding), nn.ReLU(),
        nn.Conv2d(out_channels, out_channels, kernel_size=1), nn.ReLU(),
        nn.Conv2d(out_channels, out_channels, kernel_size=1), nn.ReLU())


def nin(num_classes=10):
    return D2LNet(nn.Sequential(
        nin_block(1, 96, kernel_size=11, strides=4, padding=0), nn.MaxPool2d(3, stride=2),
        nin_block(96, 256, kernel_size=5, strides=1, padding=2), nn.MaxPool2d(3, stride=2),
        nin_block(256, 384, kernel_size=3, strides=1, padding=1), nn.MaxPool2d(3, stride=2),
        nn.Dropout(0.5),
        nin_block(384, num_classes, kernel_size=3, strides=1, padding=1),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten()), 224)


class Inception(nn.Module):
    """d2l's Inception block: four branches joined along channels."""

    def __init__(self, in_channels, c1, c2, c3, c4):
        super().__init__()
        self.b1_1 = nn.Conv2d(in_channels, c1, kernel_size=1)
        self.b2_1 = nn.Conv2d(in_channels, c2[0], kernel_size=1)
        self.b2_2 = nn.Conv2d(c2[0], c2[1], kernel_size=3, padding=1)
        self.b3_1 = nn.Conv2d(in_channels, c3[0], kernel_size=1)
        self.b3_2 = nn.Conv2d(c3[0], c3[1], kernel_size=5, padding=2)
        self.b4_1 = nn.MaxPool2d(kernel_size=3, stride=1, padding=1)
        self.b4_2 = nn.Conv2d(in_channels, c4, kernel_size=1)

    def forward(self, x):
        b1 = F.relu(self.b1_1(x))
        b2 = F.relu(self.b2_2(F.relu(self.b2_1(x))))
        b3 = F.relu(self.b3_2(F.relu(self.b3_1(x))))
        b4 = F.relu(self.b4_2(self.b4_1(x)))
        return torch.cat((b1, b2, b3, b4), dim=1)


# (c1, c2, c3, c4) of each Inception block of d2l's GoogleNet, by stage
GOOGLENET_STAGES = (
    ((64, (96, 128), (16, 32), 32), (128, (128, 192), (32, 96), 64)),
    ((192, (96, 208), (16, 48), 64), (160, (112, 224), (24, 64), 64),
     (128, (128, 256), (24, 64), 64), (112, (144, 288), (32, 64), 64),
     (256, (160, 320), (32, 128), 128)),
    ((256, (160, 320), (32, 128), 128), (384, (192, 384), (48, 128), 128)))


def googlenet(num_classes=10):
    b1 = nn.Sequential(nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3), nn.ReLU(),
                       nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
    b2 = nn.Sequential(nn.Conv2d(64, 64, kernel_size=1), nn.ReLU(),
                       nn.Conv2d(64, 192, kernel_size=3, padding=1), nn.ReLU(),
                       nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
    stages, channels = [], 192
    for i, blocks in enumerate(GOOGLENET_STAGES):
        layers = []
        for c1, c2, c3, c4 in blocks:
            layers.append(Inception(channels, c1, c2, c3, c4))
            channels = c1 + c2[1] + c3[1] + c4
        if i < 2:
            layers.append(nn.MaxPool2d(kernel_size=3, stride=2, padding=1))
        else:
            layers += [nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten()]
        stages.append(nn.Sequential(*layers))
    return D2LNet(nn.Sequential(b1, b2, *stages, nn.Linear(channels, num_classes)), 96)


def bn_lenet(num_classes=10):
    return D2LNet(nn.Sequential(
        nn.Conv2d(1, 6, kernel_size=5), nn.BatchNorm2d(6), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2),
        nn.Conv2d(6, 16, kernel_size=5), nn.BatchNorm2d(16), nn.Sigmoid(),
        nn.AvgPool2d(kernel_size=2, stride=2), nn.Flatten(),
        nn.Linear(256, 120), nn.BatchNorm1d(120), nn.Sigmoid(),
        nn.Linear(120, 84), nn.BatchNorm1d(84), nn.Sigmoid(),
        nn.Linear(84, num_classes)), 28)


class ResNeXtBlock(nn.Module):
    """d2l's ResNeXt block; `groups` is d2l's argument: the channels of each
    group of the 3x3 convolution, which has bot_channels // groups groups."""

    def __init__(self, in_channels, num_channels, groups, bot_mul, use_1x1conv=False, strides=1):
        super().__init__()
        bot_channels = int(round(num_channels * bot_mul))
        self.conv1 = nn.Conv2d(in_channels, bot_channels, kernel_size=1, stride=1)
        self.conv2 = nn.Conv2d(bot_channels, bot_channels, kernel_size=3, stride=strides,
                               padding=1, groups=bot_channels // groups)
        self.conv3 = nn.Conv2d(bot_channels, num_channels, kernel_size=1, stride=1)
        self.bn1 = nn.BatchNorm2d(bot_channels)
        self.bn2 = nn.BatchNorm2d(bot_channels)
        self.bn3 = nn.BatchNorm2d(num_channels)
        if use_1x1conv:
            self.conv4 = nn.Conv2d(in_channels, num_channels, kernel_size=1, stride=strides)
            self.bn4 = nn.BatchNorm2d(num_channels)
        else:
            self.conv4 = None

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = F.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        if self.conv4:
            x = self.bn4(self.conv4(x))
        return F.relu(y + x)


def resnet_stem(channels):
    """d2l's ResNet.b1 (DenseNet's b1 too): 7x7 stride-2 convolution, batch
    norm, relu, 3x3 stride-2 max pooling."""
    return nn.Sequential(nn.Conv2d(1, channels, kernel_size=7, stride=2, padding=3),
                         nn.BatchNorm2d(channels), nn.ReLU(),
                         nn.MaxPool2d(kernel_size=3, stride=2, padding=1))


def resnext18(arch=((2, 64), (2, 128), (2, 256), (2, 512)), groups=16, bot_mul=1,
              num_classes=10):
    """d2l's ResNet (8.6) with arch ResNet-18's, each Residual a ResNeXtBlock."""
    net, channels = nn.Sequential(resnet_stem(64)), 64
    for i, (num_residuals, num_channels) in enumerate(arch):
        blocks = []
        for j in range(num_residuals):
            first = j == 0 and i > 0
            blocks.append(ResNeXtBlock(channels, num_channels, groups, bot_mul,
                                       use_1x1conv=first, strides=2 if first else 1))
            channels = num_channels
        net.add_module(f"b{i + 2}", nn.Sequential(*blocks))
    net.add_module("last", nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
                                         nn.Linear(channels, num_classes)))
    return D2LNet(net, 96)


def densenet(num_channels=64, growth_rate=32, arch=(4, 4, 4, 4), num_classes=10):
    """d2l's DenseNet: dense blocks of batch norm -> relu -> 3x3 convolution,
    each joining its output to its input; transitions halve channels and size."""

    class DenseBlock(nn.Module):
        def __init__(self, num_convs, in_channels):
            super().__init__()
            self.net = nn.Sequential(*[
                nn.Sequential(nn.BatchNorm2d(in_channels + i * growth_rate), nn.ReLU(),
                              nn.Conv2d(in_channels + i * growth_rate, growth_rate,
                                        kernel_size=3, padding=1))
                for i in range(num_convs)])

        def forward(self, x):
            for blk in self.net:
                x = torch.cat((x, blk(x)), dim=1)
            return x

    net = nn.Sequential(resnet_stem(num_channels))
    for i, num_convs in enumerate(arch):
        net.add_module(f"dense_blk{i + 1}", DenseBlock(num_convs, num_channels))
        num_channels += num_convs * growth_rate
        if i != len(arch) - 1:
            net.add_module(f"tran_blk{i + 1}", nn.Sequential(
                nn.BatchNorm2d(num_channels), nn.ReLU(),
                nn.Conv2d(num_channels, num_channels // 2, kernel_size=1),
                nn.AvgPool2d(kernel_size=2, stride=2)))
            num_channels //= 2
    net.add_module("last", nn.Sequential(
        nn.BatchNorm2d(num_channels), nn.ReLU(), nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
        nn.Linear(num_channels, num_classes)))
    return D2LNet(net, 96)


def regnetx32(num_classes=10):
    """d2l's RegNetX32: AnyNet with a 32-channel stem and two stages of
    ResNeXt blocks (depths 4 and 6, 32 and 80 channels, groups 16, bot_mul 1)."""
    stem_channels, groups, bot_mul = 32, 16, 1
    net = nn.Sequential(nn.Sequential(
        nn.Conv2d(1, stem_channels, kernel_size=3, stride=2, padding=1),
        nn.BatchNorm2d(stem_channels), nn.ReLU()))
    channels = stem_channels
    for i, (depth, num_channels) in enumerate(((4, 32), (6, 80))):
        blocks = []
        for j in range(depth):
            blocks.append(ResNeXtBlock(channels, num_channels, groups, bot_mul,
                                       use_1x1conv=j == 0, strides=2 if j == 0 else 1))
            channels = num_channels
        net.add_module(f"stage{i + 1}", nn.Sequential(*blocks))
    net.add_module("head", nn.Sequential(nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(),
                                         nn.Linear(channels, num_classes)))
    return D2LNet(net, 96)


MODELS = {"alexnet": alexnet, "vgg": vgg, "nin": nin, "googlenet": googlenet,
          "bn_lenet": bn_lenet, "resnext18": resnext18, "densenet": densenet,
          "regnetx32": regnetx32}
