/* Trains LeNet on Fashion-MNIST through clnet's C API, then saves it.
 *   build/examples/train_lenet [MODEL] [EPOCHS]
 * (MODEL defaults to examples/models/lenet.cfg, EPOCHS to 10; the data set
 * comes from $CLNET_DATA_DIR or /usr/share/datasets/fashion-mnist.) */
#include <clnet.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call)                                                                                \
    if ((call) != CLNET_OK) goto fail

int main(int argc, char **argv) {
    const char *model = argc > 1 ? argv[1] : "examples/models/lenet.cfg";
    int epochs = argc > 2 ? atoi(argv[2]) : 10;
    clnet_runtime *rt = NULL;
    clnet_net *net = NULL;
    clnet_dataset *train = NULL, *test = NULL;
    clnet_loader *loader = NULL;
    int rc = 0;

    CHECK(clnet_runtime_create(&rt, NULL)); /* $CLNET_DEVICES, or every device */
    CHECK(clnet_net_load(&net, model));
    CHECK(clnet_net_init(net, 1)); /* seed 1 */
    clnet_optimizer_config sgd;
    clnet_optimizer_defaults(&sgd);
    sgd.lr = 0.1f, sgd.momentum = 0.9f, sgd.weight_decay = 5e-4f;
    CHECK(clnet_net_set_optimizer(net, &sgd));
    CHECK(clnet_net_bind(net, rt, 256)); /* batches of up to 256 */

    CHECK(clnet_dataset_load(&train, NULL, "train"));
    CHECK(clnet_dataset_load(&test, NULL, "test"));
    clnet_loader_config data = {.batch = 256, .seed = 1, .shuffle = 1, .mean = 0, .std = 1};
    CHECK(clnet_loader_create(&loader, train, &data));

    for (int epoch = 1; epoch <= epochs; epoch++) {
        double loss = 0;
        int seen = 0;
        for (int b = 0; b < clnet_loader_batches_per_epoch(loader); b++) {
            clnet_batch batch;
            clnet_step_result r;
            CHECK(clnet_loader_next(loader, &batch));
            CHECK(clnet_net_train_step(net, batch.images, batch.labels, batch.n, &r));
            loss += r.loss * r.n, seen += r.n;
        }
        clnet_step_result t;
        CHECK(clnet_net_evaluate(net, test, 0, 1, &t));
        printf("epoch %d: train loss %.4f, test accuracy %.4f\n", epoch, loss / seen,
               (double)t.correct / t.answers);
    }
    CHECK(clnet_net_save(net, "lenet.safetensors", NULL));
    printf("saved lenet.safetensors\n");
    goto done;
fail:
    fprintf(stderr, "train_lenet: %s\n", clnet_last_error());
    rc = 1;
done:
    clnet_loader_free(loader);
    clnet_dataset_free(train);
    clnet_dataset_free(test);
    clnet_net_free(net);
    clnet_runtime_free(rt);
    return rc;
}
